/**
 * One writer for delivery_queue: only the files of src/queue/ may INSERT into, UPDATE or DELETE
 * from it (or MERGE, COPY, TRUNCATE). Everyone else composes the queue's named transitions
 * (src/queue/states.ts lists them), so a rule about a queue row lives in one place. Reads are
 * free. Like the route-scope and OpenAPI drift tests, this reads the source, not the running app.
 */
import assert from 'node:assert/strict';
import { readFile } from 'node:fs/promises';
import path from 'node:path';
import { describe, it } from 'node:test';
import { ROOT, sourceFiles } from '../source-files.js';

const SRC = path.join(ROOT, 'src');
const OWNER = `src${path.sep}queue${path.sep}`;

/** A write of the table, however the statement is spread over lines; `q` etc. aliases allowed. */
const WRITE =
  /\b(INSERT\s+INTO|UPDATE|DELETE\s+FROM|MERGE\s+INTO|COPY|TRUNCATE(?:\s+TABLE)?)\s+(?:ONLY\s+)?delivery_queue\b/gi;

/** Every write of delivery_queue in src/, as `file:line statement`. */
async function writers(): Promise<{ file: string; line: number; verb: string }[]> {
  const found: { file: string; line: number; verb: string }[] = [];
  for (const file of await sourceFiles(SRC, /\.(ts|js|sql)$/)) {
    const text = await readFile(file, 'utf8');
    for (const match of text.matchAll(WRITE)) {
      const line = text.slice(0, match.index).split('\n').length;
      found.push({ file: path.relative(ROOT, file), line, verb: match[1]!.toUpperCase().split(/\s+/)[0]! });
    }
  }
  return found;
}

describe('delivery_queue has one writer', () => {
  it('no INSERT, UPDATE or DELETE of delivery_queue outside src/queue/', async () => {
    const outside = (await writers()).filter((w) => !w.file.startsWith(OWNER));
    assert.deepEqual(
      outside.map((w) => `${w.file}:${w.line} ${w.verb}`),
      [],
      'write delivery_queue through a transition of src/queue/ (states.ts lists them)',
    );
  });

  it('finds the queue module’s own writes (the pattern works)', async () => {
    const verbs = new Set((await writers()).filter((w) => w.file.startsWith(OWNER)).map((w) => w.verb));
    assert.deepEqual([...verbs].sort(), ['DELETE', 'INSERT', 'UPDATE']);
  });
});
