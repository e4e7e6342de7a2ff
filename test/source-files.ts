/** The repository's source tree, for tests that read the code itself (writers, import circles). */
import { readdir } from 'node:fs/promises';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

/** The repository root (tests run from dist/test/). */
export const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../..');

/** Every file below `dir` whose name matches `pattern`, recursively. */
export async function sourceFiles(dir: string, pattern: RegExp): Promise<string[]> {
  const entries = await readdir(dir, { withFileTypes: true });
  const nested = await Promise.all(
    entries.map((e) => {
      const full = path.join(dir, e.name);
      if (e.isDirectory()) return sourceFiles(full, pattern);
      return Promise.resolve(pattern.test(e.name) ? [full] : []);
    }),
  );
  return nested.flat();
}
