/**
 * @hookpost/client as a user gets it: `npm pack` the package, install the tarball into a clean
 * project in a temporary folder (its one runtime dependency comes from the npm cache the root
 * install filled), compile a strict program against it (and check that wrong calls do not
 * compile), then run that program against a live `hookpost start` with real receivers: create
 * endpoints (v1 and v1a), enqueue, a 409 idempotency conflict as a typed error, read deliveries,
 * rotate, paginate, and verify every real delivery with verifyWebhook (v1 cross-checked with the
 * official standardwebhooks verifier), plus the README's hono receiver checking hookpost-sequence
 * (the README's examples are compiled as pasted).
 * The folder is removed afterwards.
 */
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { copyFile, mkdir, mkdtemp, readdir, readFile, rm, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { after, before, describe, it } from 'node:test';
import { fileURLToPath } from 'node:url';
import { Webhook } from 'standardwebhooks';
import '../../src/api/app.js';
import { buildOpenApiDocument } from '../../src/api/openapi/document.js';
import { freePort, type HookpostProcess, runHookpost } from '../cli/process.js';
import { createTestDatabase, type TestDatabase, TOKEN, waitFor } from '../helpers.js';
import { verifyV1aWithNode } from '../v1a-verify.js';

const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../../..');
const CLIENT_DIR = path.join(ROOT, 'clients/typescript');
const SCRATCH_SOURCES = path.join(ROOT, 'test/client/scratch-project');
const TSC = path.join(ROOT, 'node_modules/typescript/bin/tsc');

interface Run {
  code: number | null;
  stdout: string;
  stderr: string;
}

/** Runs a command to its end (at most `timeoutMs`) and collects its output. */
function run(
  command: string,
  args: string[],
  cwd: string,
  env: NodeJS.ProcessEnv = process.env,
): Promise<Run> {
  return new Promise((resolve, reject) => {
    const child = spawn(command, args, { cwd, env, stdio: ['ignore', 'pipe', 'pipe'], timeout: 60_000 });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (d: Buffer) => (stdout += d));
    child.stderr.on('data', (d: Buffer) => (stderr += d));
    child.on('error', reject);
    child.on('close', (code) => resolve({ code, stdout, stderr }));
  });
}

/** The ```ts blocks of a Markdown page, in order. */
function readmeExamples(markdown: string): string[] {
  return [...markdown.matchAll(/^```ts\n([\s\S]*?)^```$/gm)].map((m) => m[1]!);
}

function expectSuccess(what: string, result: Run): string {
  assert.equal(result.code, 0, `${what} failed:\n${result.stdout}\n${result.stderr}`);
  return result.stdout;
}

describe('@hookpost/client packed, installed and run against a live hookpost', () => {
  let tmp: string;
  let project: string;
  let tarball: string;
  let db: TestDatabase;
  let hookpost: HookpostProcess | undefined;
  let baseUrl: string;

  before(async () => {
    tmp = await mkdtemp(path.join(os.tmpdir(), 'hookpost-client-'));
    project = path.join(tmp, 'project');
    await mkdir(project);
    // prepack builds the package (tsc, found in the root's node_modules/.bin).
    const packEnv = { ...process.env, npm_config_update_notifier: 'false' };
    expectSuccess(
      'npm pack',
      await run('npm', ['pack', '--pack-destination', tmp, '--silent'], CLIENT_DIR, packEnv),
    );
    const { version } = JSON.parse(await readFile(path.join(CLIENT_DIR, 'package.json'), 'utf8'));
    const packed = (await readdir(tmp)).filter((f) => f.endsWith('.tgz'));
    assert.deepEqual(packed, [`hookpost-client-${version}.tgz`]);
    tarball = path.join(tmp, packed[0]!);

    const rootPackage = JSON.parse(await readFile(path.join(ROOT, 'package.json'), 'utf8'));
    await writeFile(
      path.join(project, 'package.json'),
      JSON.stringify({
        name: 'scratch-service',
        private: true,
        type: 'module',
        dependencies: {
          '@hookpost/client': `file:${tarball}`,
          // For the README's receiver example; the versions the root pins, so they are cached.
          hono: rootPackage.dependencies.hono,
          '@hono/node-server': rootPackage.dependencies['@hono/node-server'],
        },
      }),
    );
    // Offline first: everything is in the npm cache after the root's own install.
    expectSuccess(
      'npm install',
      await run(
        'npm',
        ['install', '--prefer-offline', '--no-audit', '--no-fund', '--ignore-scripts', '--no-package-lock'],
        project,
        packEnv,
      ),
    );
    for (const file of ['program.ts', 'wrong-types.ts']) {
      await copyFile(path.join(SCRATCH_SOURCES, file), path.join(project, file));
    }
    // The README's TypeScript examples as pasted: the five calls (compiled) and the hono receiver
    // (compiled, and run by program.ts as the receiver of ordered deliveries).
    const readme = await readFile(path.join(CLIENT_DIR, 'README.md'), 'utf8');
    const [calls, receiver, ...more] = readmeExamples(readme);
    assert.ok(calls?.includes('createHookpostClient'), "the README's first example is the calls");
    assert.ok(receiver?.includes('new Hono()'), "the README's second example is the receiver");
    assert.equal(more.length, 0);
    await writeFile(path.join(project, 'readme-calls.ts'), calls!);
    await writeFile(path.join(project, 'hono-receiver.ts'), receiver!);
    await writeFile(
      path.join(project, 'tsconfig.json'),
      JSON.stringify({
        compilerOptions: {
          target: 'ES2022',
          module: 'NodeNext',
          moduleResolution: 'NodeNext',
          // A Node project without the DOM library: the package's types must not need it.
          lib: ['ES2022'],
          types: ['node'],
          typeRoots: [path.join(ROOT, 'node_modules/@types')],
          strict: true,
          noUncheckedIndexedAccess: true,
          exactOptionalPropertyTypes: true,
          skipLibCheck: false,
          outDir: 'dist',
          rootDir: '.',
        },
        files: ['program.ts', 'readme-calls.ts', 'hono-receiver.ts', 'wrong-types.ts'],
      }),
    );

    db = await createTestDatabase();
    const port = await freePort();
    baseUrl = `http://127.0.0.1:${port}`;
    hookpost = runHookpost(['start'], {
      DATABASE_URL: db.url,
      PORT: String(port),
      HOOKPOST_ADMIN_TOKEN: TOKEN,
      HOOKPOST_ALLOW_PRIVATE_TARGETS: 'true',
      HOOKPOST_DATA_DIR: path.join(tmp, 'data'),
    });
    await waitFor('hookpost to be ready', async () => {
      if (hookpost!.child.exitCode !== null) throw new Error(`hookpost exited:\n${hookpost!.output()}`);
      return (await fetch(`${baseUrl}/readyz`).catch(() => undefined))?.ok;
    });
  });

  after(async () => {
    await hookpost?.stop();
    await db?.drop();
    if (tmp) await rm(tmp, { recursive: true, force: true });
  });

  it('is ESM with types, one runtime dependency, and no Node-only import', async () => {
    const installed = path.join(project, 'node_modules/@hookpost/client');
    const manifest = JSON.parse(await readFile(path.join(installed, 'package.json'), 'utf8'));
    assert.equal(manifest.type, 'module');
    assert.deepEqual(Object.keys(manifest.dependencies), ['openapi-fetch']);
    assert.deepEqual(Object.keys(manifest.exports), ['.', './verify', './package.json']);
    const files = (await readdir(path.join(installed, 'dist'), { recursive: true })).sort();
    for (const entry of ['index.js', 'index.d.ts', 'verify.js', 'verify.d.ts', 'generated/openapi.d.ts']) {
      assert.ok(files.includes(entry), `dist/${entry} is in the package`);
    }
    assert.ok(!files.some((f) => f.endsWith('.ts') && !f.endsWith('.d.ts')), 'no TypeScript sources');
    for (const file of files.filter((f) => f.endsWith('.js'))) {
      const text = await readFile(path.join(installed, 'dist', file), 'utf8');
      assert.doesNotMatch(
        text,
        /from ['"]node:|require\(|\bBuffer\b|\bprocess\./,
        `${file} runs outside Node`,
      );
    }
    // The verifier loads nothing else, so a receiver does not pull in the API client.
    const verifyJs = await readFile(path.join(installed, 'dist/verify.js'), 'utf8');
    assert.doesNotMatch(verifyJs, /^import /m);
  });

  it('compiles a strict program against it, and wrong calls do not compile', async () => {
    const result = await run(process.execPath, [TSC, '-p', project], project);
    const errors = [...result.stdout.matchAll(/^(\S+?\.ts)\((\d+),\d+\): error (TS\d+)/gm)]
      .map(([, file, line, code]) => `${file}:${line} ${code}`)
      // @hono/node-server's own declarations name a DOM type (RequestInfo) that a Node project
      // without the DOM library lacks; the README example is fine, its dependency's .d.ts is not.
      // Every other file is checked, the client's .d.ts included (no skipLibCheck).
      .filter((e) => !e.startsWith('node_modules/@hono/node-server/'));
    const source = (await readFile(path.join(project, 'wrong-types.ts'), 'utf8')).split('\n');
    const expected = source.flatMap((text, i) => {
      const code = /\/\/ expect (TS\d+)$/.exec(text)?.[1];
      return code ? [`wrong-types.ts:${i + 1} ${code}`] : [];
    });
    assert.ok(expected.length >= 8);
    assert.deepEqual(errors, expected, `tsc reported:\n${result.stdout}`);
    assert.equal(result.code, 2, 'tsc fails on wrong-types.ts alone');
  });

  it('the document the types come from is the one the live hookpost serves', async () => {
    const served = await (await fetch(`${baseUrl}/openapi.json`)).json();
    assert.deepEqual(served, buildOpenApiDocument());
  });

  it('works against the live hookpost and verifies its real v1 and v1a deliveries', async () => {
    const result = await run(process.execPath, ['dist/program.js'], project, {
      PATH: process.env.PATH ?? '',
      HOOKPOST_URL: baseUrl,
      HOOKPOST_TOKEN: TOKEN,
    });
    const report = JSON.parse(expectSuccess('the program', result).trim().split('\n').at(-1)!);

    assert.equal(report.firstStatus, 202);
    assert.equal(report.repeatedStatus, 200, 'the same Idempotency-Key and body: the same delivery');
    assert.equal(report.repeatedSameIds, true);
    assert.equal(report.conflict.isHookpostError, true, 'a 409 comes back as a HookpostError');
    assert.equal(report.conflict.status, 409);
    assert.equal(report.conflict.code, 'idempotency_conflict');
    assert.deepEqual(report.batchDuplicate, [false, false, false]);
    assert.equal(report.details.length, 8, 'four messages fanned out to the v1 and the v1a endpoint');
    for (const d of report.details) {
      assert.equal(d.status, 'delivered');
      assert.equal(d.attempts, 1);
      assert.equal(d.payload.order_id, 'o1');
    }

    // Pagination: every delivery of the tenant exactly once, following next_cursor, 3 a page.
    assert.equal(report.enqueuedIds.length, 13);
    assert.deepEqual([...report.listed].sort(), [...report.enqueuedIds].sort());
    assert.equal(report.pageRequests.length, 5);
    for (const [i, request] of report.pageRequests.entries()) {
      const url = new URL(request.slice('GET '.length), baseUrl);
      assert.equal(url.pathname, '/v1/deliveries');
      assert.equal(url.searchParams.get('limit'), '3');
      assert.equal(url.searchParams.get('tenant_id'), 'scratch_tenant');
      assert.equal(url.searchParams.get('cursor'), i === 0 ? null : report.listed[i * 3 - 1]);
    }

    // The README's receiver: in order, by sequence, and a replay recognised by its webhook-id.
    assert.equal(report.replayStatus, 202);
    assert.deepEqual(report.readmeReceiver.slice(0, 3), [
      'applied s1 packed #1',
      'applied s1 shipped #2',
      'applied s1 delivered #3',
    ]);
    assert.match(report.readmeReceiver[3], /^duplicate msg_/);

    // Every request the recorder got: verified with the endpoint's key, both keys after the
    // rotation (hookpost signs with both during the grace period), never with the other scheme's.
    assert.equal(report.verified.length, 10);
    for (const v of report.verified) {
      assert.equal(v.withOldKey.ok, true, JSON.stringify(v.withOldKey));
      assert.equal(v.withOldKey.payload.order_id, 'o1');
      assert.equal(v.signatures, v.rotated ? 2 : 1);
      if (v.rotated) assert.equal(v.withNewKey.ok, true, JSON.stringify(v.withNewKey));
      assert.deepEqual(v.withWrongKey, { ok: false, reason: 'no_matching_signature' });
      const body = Buffer.from(v.raw.body, 'base64');
      const keys = v.rotated ? [report.keys.before, report.keys.after] : [report.keys.before];
      for (const k of keys) {
        if (v.scheme === 'v1') {
          // The official verifier accepts exactly what verifyWebhook accepted.
          assert.doesNotThrow(() => new Webhook(k.v1).verify(body, v.raw.headers));
        } else {
          assert.ok(verifyV1aWithNode(k.v1a, v.raw.headers, body).includes(true), 'node:crypto agrees');
        }
      }
    }
    assert.equal(report.verified.filter((v: { scheme: string }) => v.scheme === 'v1a').length, 5);
    assert.equal(report.verified.filter((v: { rotated: boolean }) => v.rotated).length, 2);
  });
});
