/**
 * With no usable database behind it, whatever sits in front, every API request that needs the
 * database is answered 503 database_unavailable + Retry-After within 2 s, and the log says so
 * once for the outage and once when it ends: a TCP proxy that accepts and closes (HAProxy with no
 * server up), several hosts that all refuse or close, a host that never answers listed before
 * them. Upstream postgres.js made these requests wait until a server came back. (PgBouncer:
 * pgbouncer.test.ts; a real standby and promotion: failover.test.ts.)
 */
import assert from 'node:assert/strict';
import net from 'node:net';
import { Writable } from 'node:stream';
import { after, before, describe, it } from 'node:test';
import { pino } from 'pino';
import { createApp } from '../../src/api/app.js';
import { connect } from '../../src/db/connect.js';
import { readMigrations } from '../../src/db/migrate.js';
import { DatabaseOutages } from '../../src/db/outage.js';
import { createSecretBox } from '../../src/endpoints/secrets.js';
import { EndpointStore } from '../../src/endpoints/store.js';
import { createTestDatabase, type TestDatabase, TOKEN, testConfig, waitFor } from '../helpers.js';
import { freeFixedPort } from './ports.js';
import { type CuttableProxy, startProxy } from './tcp-proxy.js';

/** An app over its own pool on `url`, as `hookpost api` builds it, with its log lines kept. */
async function appOn(url: string) {
  const lines: { msg: string; message?: string }[] = [];
  const log = pino(
    { level: 'info' },
    new Writable({
      write(chunk, _encoding, done) {
        for (const line of String(chunk).split('\n').filter(Boolean)) lines.push(JSON.parse(line));
        done();
      },
    }),
  );
  const sql = connect(url, { max: 4, connectTimeoutSeconds: 1.5 });
  const outages = new DatabaseOutages(sql, log);
  const config = testConfig();
  const app = createApp({
    sql,
    config,
    log,
    adminToken: TOKEN,
    endpoints: new EndpointStore(sql, createSecretBox(config.secretKey, config.secretKeyPrevious)),
    migrationCount: (await readMigrations()).length,
    outages,
  });
  const get = async () => {
    const started = Date.now();
    const res = await app.request('/v1/endpoints', { headers: { authorization: `Bearer ${TOKEN}` } });
    const body = (await res.json()) as { error?: { code: string } };
    return {
      status: res.status,
      code: body.error?.code,
      retryAfter: res.headers.get('retry-after'),
      ms: Date.now() - started,
    };
  };
  return {
    lines,
    get,
    /** Twenty requests at once, then twenty more one after another: every answer. */
    async burst() {
      const answers = await Promise.all(Array.from({ length: 20 }, get));
      for (let i = 0; i < 20; i++) answers.push(await get());
      return answers;
    },
    async close() {
      outages.stop();
      await sql.end({ timeout: 1 });
    },
  };
}

type Answers = Awaited<ReturnType<Awaited<ReturnType<typeof appOn>>['burst']>>;

function assertFastUnavailable(answers: Answers, what: string) {
  const slowest = Math.max(...answers.map((a) => a.ms));
  console.log(`# ${what}: ${answers.length} requests, all ${answers[0]?.status}, slowest ${slowest} ms`);
  for (const a of answers) {
    assert.equal(a.status, 503, `${what}: ${JSON.stringify(a)}`);
    assert.equal(a.code, 'database_unavailable');
    assert.ok(Number(a.retryAfter) > 0, 'Retry-After');
  }
  assert.ok(slowest < 2000, `${what}: slowest answer ${slowest} ms`);
}

const outageLines = (lines: { msg: string; message?: string }[]) =>
  lines.filter((l) => /database unavailable/.test(l.msg));

describe('no usable database, whatever is in front', () => {
  let db: TestDatabase;
  let proxy: CuttableProxy;
  before(async () => {
    db = await createTestDatabase();
    proxy = await startProxy(Number(new URL(db.url).port));
  });
  after(async () => {
    await proxy.close();
    await db.drop();
  });

  it('a TCP proxy that accepts and closes: 503 within 2 s, one log line, back by itself', async () => {
    const api = await appOn(proxy.via(db.url));
    try {
      assert.equal((await api.get()).status, 200);
      proxy.closeOnAccept();
      assertFastUnavailable(await api.burst(), 'a proxy that accepts and closes');
      assert.equal(outageLines(api.lines).length, 1, JSON.stringify(api.lines));
      assert.match(outageLines(api.lines)[0]!.message ?? '', /CONNECTION_CLOSED|ECONNRESET/);
      await proxy.restore();
      await waitFor('200 again', async () => (await api.get()).status === 200, 5000);
      await waitFor(
        'the end of the outage logged',
        () => api.lines.some((l) => l.msg === 'database available again'),
        5000,
      );
    } finally {
      await proxy.restore();
      await api.close();
    }
  });

  it('several hosts that refuse or close, a silent one first: 503 within 2 s naming each', async () => {
    const silent = net.createServer((socket) => socket.on('error', () => {}));
    await new Promise<void>((r) => silent.listen(0, '127.0.0.1', r));
    const silentPort = (silent.address() as net.AddressInfo).port;
    const { host } = new URL(db.url);
    const refused = await freeFixedPort();
    proxy.closeOnAccept();
    // WHATWG URLs take one host: the list goes in by hand.
    const url = db.url.replace(
      `@${host}`,
      `@127.0.0.1:${silentPort},127.0.0.1:${proxy.port},127.0.0.1:${refused}`,
    );
    const api = await appOn(url);
    try {
      assertFastUnavailable(await api.burst(), 'three hosts: silent, closing, refusing');
      const [line] = outageLines(api.lines);
      assert.equal(outageLines(api.lines).length, 1);
      for (const port of [silentPort, proxy.port, refused])
        assert.match(line!.message ?? '', new RegExp(`:${port}`));
      await proxy.restore(); // the proxy's host now leads to the database
      await waitFor('200 again through the second host', async () => (await api.get()).status === 200, 5000);
    } finally {
      await proxy.restore();
      await api.close();
      silent.close();
    }
  });
});
