/**
 * No import circles in src/: a module that imports, through any chain, a module that imports it
 * cannot be understood (or initialised) on its own, and a circle usually means a rule split
 * between two owners. Walks the relative imports of every source file (type-only ones too: they
 * couple the modules just the same) and fails naming each circle.
 */
import assert from 'node:assert/strict';
import { readFile } from 'node:fs/promises';
import path from 'node:path';
import { describe, it } from 'node:test';
import { ROOT, sourceFiles } from './source-files.js';

const SRC = path.join(ROOT, 'src');

/** `import … from './x.js'`, `export … from '../y.js'`, `import('./z.js')`, `import './w.js'`. */
const IMPORT = /(?:\bfrom\s*|\bimport\s*\(\s*|^\s*import\s+)['"](\.{1,2}\/[^'"]+)['"]/gm;

/** The import graph of src/: file → the src/ files it imports (relative paths from the root). */
async function importGraph(): Promise<Map<string, string[]>> {
  const graph = new Map<string, string[]>();
  for (const file of await sourceFiles(SRC, /\.ts$/)) {
    const text = await readFile(file, 'utf8');
    const targets = [...text.matchAll(IMPORT)].map((m) =>
      path.relative(ROOT, path.resolve(path.dirname(file), m[1]!.replace(/\.js$/, '.ts'))),
    );
    graph.set(path.relative(ROOT, file), [...new Set(targets)]);
  }
  return graph;
}

/** The strongly connected components with more than one file (or a file importing itself). */
function circles(graph: Map<string, string[]>): string[][] {
  let counter = 0;
  const index = new Map<string, number>();
  const low = new Map<string, number>();
  const stack: string[] = [];
  const onStack = new Set<string>();
  const found: string[][] = [];
  const visit = (node: string) => {
    index.set(node, counter);
    low.set(node, counter);
    counter++;
    stack.push(node);
    onStack.add(node);
    for (const next of graph.get(node) ?? []) {
      if (!graph.has(next)) continue; // not a source file (a JSON import, a typo tsc reports)
      if (!index.has(next)) {
        visit(next);
        low.set(node, Math.min(low.get(node)!, low.get(next)!));
      } else if (onStack.has(next)) low.set(node, Math.min(low.get(node)!, index.get(next)!));
    }
    if (low.get(node) !== index.get(node)) return;
    const component: string[] = [];
    for (;;) {
      const member = stack.pop()!;
      onStack.delete(member);
      component.push(member);
      if (member === node) break;
    }
    if (component.length > 1 || graph.get(node)?.includes(node)) found.push(component.sort());
  };
  for (const node of [...graph.keys()].sort()) if (!index.has(node)) visit(node);
  return found;
}

describe('imports', () => {
  it('src/ has no import circle', async () => {
    assert.deepEqual(circles(await importGraph()), []);
  });

  it('the walk sees the imports (a circle made up here is found)', () => {
    const graph = new Map([
      ['a.ts', ['b.ts']],
      ['b.ts', ['c.ts']],
      ['c.ts', ['a.ts']],
      ['d.ts', ['a.ts']],
    ]);
    assert.deepEqual(circles(graph), [['a.ts', 'b.ts', 'c.ts']]);
  });

  it('reads the real graph (the dispatcher imports its sender)', async () => {
    const graph = await importGraph();
    assert.ok(
      graph
        .get(path.join('src', 'dispatch', 'dispatcher.ts'))
        ?.includes(path.join('src', 'dispatch', 'sender.ts')),
    );
  });
});
