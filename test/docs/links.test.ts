/**
 * The documentation holds together: every relative link and image in README.md, CHANGELOG.md
 * and docs/*.md points at a file that exists (and at a heading that exists, for `#anchor` links),
 * the README stays a front door (at most ~400 lines), and every HOOKPOST_* setting the code
 * knows is in the configuration reference.
 */
import assert from 'node:assert/strict';
import { readdirSync, readFileSync, statSync } from 'node:fs';
import path from 'node:path';
import { describe, it } from 'node:test';
import { fileURLToPath } from 'node:url';

const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../../..');
const read = (file: string) => readFileSync(path.join(ROOT, file), 'utf8');

/** The pages a reader can reach, relative to the repository root. */
function pages(): string[] {
  const docs = readdirSync(path.join(ROOT, 'docs')).filter((f) => f.endsWith('.md'));
  return ['README.md', 'CHANGELOG.md', ...docs.map((f) => `docs/${f}`)];
}

/** The text outside fenced code blocks, where links are links. */
function prose(markdown: string): string {
  return markdown.replace(/^```[\s\S]*?^```/gm, '');
}

/** GitHub's anchor for a heading: lower case, punctuation dropped, spaces to hyphens. */
function headingAnchor(heading: string): string {
  return heading
    .trim()
    .toLowerCase()
    .replace(/[^\p{L}\p{N}\s_-]/gu, '')
    .replace(/\s/g, '-');
}

function anchors(markdown: string): Set<string> {
  const seen = new Map<string, number>();
  const result = new Set<string>();
  for (const match of prose(markdown).matchAll(/^#{1,6}\s+(.+)$/gm)) {
    const base = headingAnchor(match[1]!);
    const count = seen.get(base) ?? 0;
    seen.set(base, count + 1);
    result.add(count === 0 ? base : `${base}-${count}`);
  }
  return result;
}

/** Every `[text](target)` and `![alt](target)` that is not an absolute URL. */
function relativeLinks(markdown: string): string[] {
  const targets = [...prose(markdown).matchAll(/!?\[[^\]]*\]\(([^)\s]+)\)/g)].map((m) => m[1]!);
  return targets.filter((t) => !/^[a-z]+:/i.test(t));
}

describe('documentation', () => {
  it('every relative link, image and anchor resolves', () => {
    const broken: string[] = [];
    for (const page of pages()) {
      for (const target of relativeLinks(read(page))) {
        const [file, anchor] = target.split('#') as [string, string | undefined];
        const resolved = file === '' ? page : path.normalize(path.join(path.dirname(page), file));
        let exists = false;
        try {
          exists = statSync(path.join(ROOT, resolved)).isFile();
        } catch {}
        if (!exists) {
          broken.push(`${page}: ${target} (no file ${resolved})`);
          continue;
        }
        if (anchor !== undefined && resolved.endsWith('.md') && !anchors(read(resolved)).has(anchor)) {
          broken.push(`${page}: ${target} (no heading #${anchor} in ${resolved})`);
        }
      }
    }
    assert.deepEqual(broken, []);
  });

  it('the anchor rule matches GitHub for the headings the pages link to', () => {
    assert.equal(headingAnchor('The partner portal (`/portal`)'), 'the-partner-portal-portal');
    assert.equal(headingAnchor('Deduplicate by `webhook-id`'), 'deduplicate-by-webhook-id');
    assert.equal(
      headingAnchor('Dead letters, replay and operational events'),
      'dead-letters-replay-and-operational-events',
    );
  });

  it('the README is a front door, at most ~400 lines', () => {
    const lines = read('README.md').split('\n').length;
    assert.ok(lines <= 420, `README.md has ${lines} lines; move reference material into docs/`);
  });

  it('every HOOKPOST_* setting in src/ is in the configuration reference', () => {
    const reference = read('docs/configuration.md');
    const missing = new Set<string>();
    const walk = (dir: string) => {
      for (const entry of readdirSync(path.join(ROOT, dir), { withFileTypes: true })) {
        const file = path.join(dir, entry.name);
        if (entry.isDirectory()) walk(file);
        else if (file.endsWith('.ts')) {
          for (const [name] of read(file).matchAll(/\bHOOKPOST_[A-Z0-9_]+\b/g)) {
            // Not settings: an error code of the SSRF guard, and the quick start's shell variable.
            if (name === 'HOOKPOST_PRIVATE_TARGET' || name === 'HOOKPOST_URL') continue;
            if (!reference.includes(`\`${name}\``)) missing.add(name);
          }
        }
      }
    };
    walk('src');
    assert.deepEqual([...missing], []);
  });
});
