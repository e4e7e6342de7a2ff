/**
 * Tests that need a system binary (Prometheus, Chromium) run wherever it is installed. On a machine
 * without it they are reported skipped with the line that installs it, so `npm ci && npm test`
 * passes on a bare machine. `.ci/run` sets HOOKPOST_TEST_REQUIRE_BINARIES=1 after installing them:
 * there a missing binary fails the run instead of skipping silently.
 */
import { accessSync, constants } from 'node:fs';
import path from 'node:path';

/** The absolute path of `name` on PATH, or undefined when it is not there (or not executable). */
export function findOnPath(name: string, searchPath = process.env.PATH ?? ''): string | undefined {
  for (const dir of searchPath.split(path.delimiter)) {
    if (!dir) continue;
    const candidate = path.join(dir, name);
    try {
      accessSync(candidate, constants.X_OK);
      return candidate;
    } catch {
      // not in this directory
    }
  }
  return undefined;
}

/**
 * `false` when every binary is installed, else the skip reason to hand to `describe(…, { skip })`.
 * Throws instead when HOOKPOST_TEST_REQUIRE_BINARIES=1, so CI cannot pass by skipping.
 */
export function skipUnlessInstalled(binaries: string[], installLine: string): string | false {
  const missing = binaries.filter((b) => findOnPath(b) === undefined);
  if (missing.length === 0) return false;
  const reason = `${missing.join(', ')} not installed; install with \`${installLine}\``;
  if (process.env.HOOKPOST_TEST_REQUIRE_BINARIES === '1') {
    throw new Error(`${reason} (HOOKPOST_TEST_REQUIRE_BINARIES=1: required here)`);
  }
  return reason;
}
