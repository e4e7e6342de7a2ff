#!/usr/bin/env node
// Launcher: the CLI is compiled TypeScript in dist/. In a source checkout this file first makes
// sure dist/ is not older than src/ (a fresh clone, a `git pull`, an edit) and compiles
// incrementally when it is, so `npm start` never runs stale code and never needs a build of its
// own when nothing changed. In an installed package or the Docker image there is no src/: dist/
// is all there is.
import { spawnSync } from 'node:child_process';
import { existsSync, mkdirSync, readdirSync, rmSync, statSync, utimesSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
const entry = path.join(root, 'dist', 'src', 'main.js');
// Written by `npm run build` (tsc --incremental) and touched after every build this file runs:
// its mtime is "when dist/ was last brought up to date".
const buildInfo = path.join(root, 'dist', '.tsbuildinfo');
const lockDir = path.join(root, 'dist', '.build-lock');

function fail(message) {
  process.stderr.write(`hookpost: ${message}\n`);
  process.exit(1);
}

function newestMtime(dir) {
  let newest = 0;
  for (const e of readdirSync(dir, { withFileTypes: true })) {
    const full = path.join(dir, e.name);
    if (e.isDirectory()) newest = Math.max(newest, newestMtime(full));
    else if (e.name.endsWith('.ts')) newest = Math.max(newest, statSync(full).mtimeMs);
  }
  return newest;
}

function isStale() {
  if (!existsSync(entry) || !existsSync(buildInfo)) return true;
  const sources = Math.max(
    newestMtime(path.join(root, 'src')),
    statSync(path.join(root, 'tsconfig.json')).mtimeMs,
  );
  return sources > statSync(buildInfo).mtimeMs;
}

function sleep(ms) {
  Atomics.wait(new Int32Array(new SharedArrayBuffer(4)), 0, 0, ms);
}

/** One build at a time: processes started side by side wait for the first one's build. */
function withBuildLock(work) {
  mkdirSync(path.dirname(lockDir), { recursive: true });
  const deadline = Date.now() + 120_000;
  for (;;) {
    try {
      mkdirSync(lockDir);
      break;
    } catch (error) {
      if (error.code !== 'EEXIST') throw error;
      if (Date.now() > deadline) rmSync(lockDir, { recursive: true, force: true }); // left by a killed build
      sleep(200);
    }
  }
  try {
    work();
  } finally {
    rmSync(lockDir, { recursive: true, force: true });
  }
}

function build() {
  const tsc = path.join(root, 'node_modules', 'typescript', 'bin', 'tsc');
  if (!existsSync(tsc)) {
    fail(
      'dist/ is missing or older than src/, and TypeScript is not installed: run `npm ci`, then `npm run build`',
    );
  }
  // Without its outputs the incremental state would claim there is nothing to emit.
  if (!existsSync(entry) && existsSync(buildInfo)) rmSync(buildInfo, { force: true });
  process.stderr.write(
    existsSync(entry)
      ? 'hookpost: src/ changed since the last build: compiling…\n'
      : 'hookpost: first run: compiling…\n',
  );
  const result = spawnSync(
    process.execPath,
    [tsc, '-p', 'tsconfig.json', '--incremental', '--tsBuildInfoFile', buildInfo],
    { cwd: root, stdio: ['ignore', 'inherit', 'inherit'] },
  );
  if (result.status !== 0)
    fail('the TypeScript build failed (see above); fix it, or run `npm run build` to retry');
  const now = new Date();
  utimesSync(buildInfo, now, now);
}

if (existsSync(path.join(root, 'src'))) {
  if (isStale()) withBuildLock(() => isStale() && build());
} else if (!existsSync(entry)) {
  fail(
    'dist/src/main.js is missing: this copy of hookpost was installed without its build (run `npm run build`)',
  );
}

const { main } = await import(pathToFileURL(entry).href);
main(process.argv.slice(2)).then(
  (code) => {
    if (typeof code === 'number') process.exitCode = code;
  },
  (err) => {
    console.error(`hookpost: ${err instanceof Error ? err.message : String(err)}`);
    process.exitCode = 1;
  },
);
