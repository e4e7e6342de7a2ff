import assert from 'node:assert/strict';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { after, before, describe, it } from 'node:test';
import { freePort, type HookpostProcess, runHookpost } from '../cli/process.js';
import { createTestDatabase, type Receiver, startReceiver, type TestDatabase, waitFor } from '../helpers.js';
import { skipUnlessInstalled } from '../system-binary.js';
import { promtoolTestFile } from './alert-cases.js';
import { DASHBOARDS, loadDashboard, substituteGrafanaVariables } from './dashboard.js';
import { type PrometheusServer, promtool, startPrometheus } from './prometheus-server.js';

const TOKEN = 'prometheus-test-token-0123456789';
const dashboard = loadDashboard();

// A bare machine reports this suite skipped with the install line; .ci/run installs the package
// and sets HOOKPOST_TEST_REQUIRE_BINARIES=1, so there a missing binary fails instead.
const skip = skipUnlessInstalled(['prometheus', 'promtool'], 'apt-get install -y prometheus');

describe('a real Prometheus scraping hookpost api + dispatcher', { skip }, () => {
  let db: TestDatabase;
  let prometheus: PrometheusServer;
  let api: HookpostProcess;
  let dispatcher: HookpostProcess;
  let apiUrl: string;
  let traffic: Promise<void> | undefined;
  let trafficOn = true;
  const receivers: Receiver[] = [];
  const endpointIds: string[] = [];

  before(async () => {
    db = await createTestDatabase();
    const [apiPort, metricsPort] = [await freePort(), await freePort()];
    const env = {
      DATABASE_URL: db.url,
      HOOKPOST_ADMIN_TOKEN: TOKEN,
      HOOKPOST_ALLOW_PRIVATE_TARGETS: 'true',
      HOOKPOST_METRICS_CACHE_SECONDS: '1',
    };
    api = runHookpost(['api'], { ...env, PORT: String(apiPort) });
    dispatcher = runHookpost(['dispatcher'], {
      ...env,
      HOOKPOST_METRICS_PORT: String(metricsPort),
      HOOKPOST_RETRY_BASE_SECONDS: '0.01',
      HOOKPOST_RETRY_CAP_SECONDS: '0.05',
      HOOKPOST_MAX_ATTEMPTS: '3',
    });
    apiUrl = `http://127.0.0.1:${apiPort}`;
    const up = (url: string) => async () => (await fetch(url).catch(() => undefined))?.ok;
    await waitFor('the API', up(`${apiUrl}/metrics`));
    await waitFor('the dispatcher’s metrics listener', up(`http://127.0.0.1:${metricsPort}/metrics`));
    prometheus = await startPrometheus([`127.0.0.1:${apiPort}`, `127.0.0.1:${metricsPort}`]);
  });
  after(async () => {
    trafficOn = false;
    await traffic;
    await prometheus?.stop();
    if (api) assert.equal(await api.stop(), 0, api.output());
    if (dispatcher) assert.equal(await dispatcher.stop(), 0, dispatcher.output());
    await Promise.all(receivers.map((r) => r.close()));
    await db?.drop();
  });

  const call = async (method: string, route: string, body: unknown) => {
    const res = await fetch(apiUrl + route, {
      method,
      headers: { authorization: `Bearer ${TOKEN}`, 'content-type': 'application/json' },
      body: JSON.stringify(body),
    });
    assert.ok(res.ok, `${method} ${route} answered ${res.status}`);
    return res.json() as Promise<{ id: string }>;
  };

  it('scrapes both processes and sees the traffic in the core panels', async () => {
    const ok = await startReceiver();
    // Every fifth request fails: a steady failure rate that never trips the breaker.
    let calls = 0;
    const flaky = await startReceiver((_req, res) => res.writeHead(++calls % 5 === 0 ? 503 : 200).end());
    const down = await startReceiver((_req, res) => res.writeHead(503).end());
    receivers.push(ok, flaky, down);
    const okId = (await call('POST', '/v1/endpoints', { url: ok.url })).id;
    const flakyId = (await call('POST', '/v1/endpoints', { url: flaky.url })).id;
    const downId = (await call('POST', '/v1/endpoints', { url: down.url })).id;
    endpointIds.push(okId, flakyId, downId);
    // Steady traffic for the rest of the file, so rate() windows always hold some.
    traffic = (async () => {
      for (let n = 0; trafficOn; n++) {
        const items = Array.from({ length: 20 }, (_, i) => ({
          endpoint_id: i < 15 ? okId : i < 19 ? flakyId : downId,
          event_type: 't',
          payload: { n, i },
        }));
        await call('POST', '/v1/deliveries/batch', { items });
        await new Promise((r) => setTimeout(r, 200));
      }
    })();

    await waitFor('both targets scraped and up', async () => {
      const t = await prometheus.get('/api/v1/targets');
      const active = t.data.activeTargets as { health: string }[];
      return active.length === 2 && active.every((x) => x.health === 'up');
    });
    const first = async (expr: string) => {
      const r = await prometheus.query(substituteGrafanaVariables(expr));
      assert.equal(r.status, 'success', `${expr}: ${r.error}`);
      return r.data!.result;
    };
    const panel = (title: string) => dashboard.panels.find((p) => p.type !== 'row' && p.title === title)!;
    /** Waits until the panel's query `index` returns a series that `check` accepts. */
    const shows = (title: string, index: number, check: (value: number) => boolean) =>
      waitFor(
        `"${title}" to show data`,
        async () => (await first(panel(title).targets![index]!.expr)).some((s) => check(Number(s.value[1]))),
        30000,
      );
    await shows('Throughput', 0, (enqueuedPerSecond) => enqueuedPerSecond > 0);
    await shows('Throughput', 2, (deliveredPerSecond) => deliveredPerSecond > 0);
    await shows('Delivery lag percentiles', 0, (p50) => Number.isFinite(p50) && p50 > 0);
    await shows('Attempt duration percentiles', 1, (p95) => Number.isFinite(p95) && p95 > 0);
    await shows('Success rate', 0, (rate) => rate > 0.5 && rate < 1);
    const depth = await first(panel('Queue depth by status').targets![0]!.expr);
    assert.deepEqual(depth.map((s) => s.metric.status).sort(), ['failed', 'in_flight', 'pending']);
    const outcomes = await first(panel('Attempt outcomes').targets![0]!.expr);
    assert.ok(outcomes.some((s) => s.metric.outcome === 'retryable' && Number(s.value[1]) > 0));
    // The dispatcher runs a retention pass at start: its gauges and the database size are there.
    await shows('Database size', 0, (bytes) => bytes > 1_000_000);
    await shows('Since the last successful retention pass', 0, (age) => age >= 0 && age < 3600);
  });

  it('evaluates every dashboard expression without error', async () => {
    const exprs = dashboard.panels.flatMap((p) =>
      (p.targets ?? []).map((t) => ({ panel: p.title, expr: t.expr })),
    );
    assert.ok(exprs.length >= 15, `found ${exprs.length} expressions`);
    for (const { panel, expr } of exprs) {
      const r = await prometheus.query(substituteGrafanaVariables(expr));
      assert.equal(r.status, 'success', `${panel}: ${expr}: ${r.error}`);
    }
    for (const p of dashboard.panels.filter((x) => x.type !== 'row')) {
      // biome-ignore lint/suspicious/noTemplateCurlyInString: Grafana's variable syntax, not a template
      assert.equal(p.datasource?.uid, '${datasource}', `${p.title} uses the datasource variable`);
    }
  });

  it('fills the endpoint and job variables, and shows an opened circuit', async () => {
    const variable = dashboard.templating.list.find((v) => v.name === 'endpoint')!;
    assert.match(JSON.stringify(variable.query), /label_values\(hookpost_circuit_state, endpoint\)/);
    assert.ok(dashboard.templating.list.some((v) => v.name === 'datasource' && v.type === 'datasource'));
    const values = await prometheus.get(
      `/api/v1/label/endpoint/values?match[]=${encodeURIComponent('hookpost_circuit_state')}`,
    );
    assert.deepEqual([...values.data].sort(), [...endpointIds].sort());
    const jobs = await prometheus.get(
      `/api/v1/label/job/values?match[]=${encodeURIComponent('hookpost_delivery_attempts_total')}`,
    );
    assert.deepEqual(jobs.data, ['hookpost']);
    // The always-503 endpoint trips its breaker after 10 consecutive failures.
    const open = dashboard.panels.find((p) => p.title === 'Open circuits')!.targets![0]!.expr;
    await waitFor(
      'the open circuit in Prometheus',
      async () =>
        Number((await prometheus.query(substituteGrafanaVariables(open))).data?.result[0]?.value[1]) === 1,
      30000,
    );
  });

  it('loads and evaluates every alert rule, each with a summary and a runbook', async () => {
    await promtool('check', 'rules', path.join(DASHBOARDS, 'alerts.yml'));
    await waitFor('every rule evaluated at least once', async () => {
      const rules = (await prometheus.get('/api/v1/rules')).data.groups.flatMap(
        (g: { rules: unknown[] }) => g.rules,
      );
      return rules.length > 0 && rules.every((r: { health: string }) => r.health !== 'unknown');
    });
    const rules = (await prometheus.get('/api/v1/rules')).data.groups.flatMap(
      (g: { rules: unknown[] }) => g.rules,
    ) as {
      name: string;
      query: string;
      health: string;
      lastError?: string;
      annotations: Record<string, string>;
    }[];
    assert.equal(rules.length, 10);
    for (const rule of rules) {
      assert.equal(rule.health, 'ok', `${rule.name}: ${rule.lastError}`);
      assert.ok(rule.annotations.summary, `${rule.name} has a summary`);
      assert.ok(rule.annotations.runbook, `${rule.name} has a runbook`);
      const r = await prometheus.query(rule.query);
      assert.equal(r.status, 'success', `${rule.name}: ${r.error}`);
    }
  });

  it('fires each alert at its threshold (promtool test rules)', async () => {
    // The rules exactly as Prometheus loaded them, minus annotations: promtool would otherwise
    // compare every expanded runbook line, and the annotations are checked above.
    const rules = (await prometheus.get('/api/v1/rules')).data.groups.flatMap(
      (g: { rules: unknown[] }) => g.rules,
    ) as { name: string; query: string; duration: number; labels: Record<string, string> }[];
    const dir = await mkdtemp(path.join(os.tmpdir(), 'hookpost-promtool-'));
    const ruleFile = path.join(dir, 'alerts.json');
    const testFile = path.join(dir, 'alerts.test.json');
    const groups = [
      {
        name: 'hookpost',
        rules: rules.map((r) => ({ alert: r.name, expr: r.query, for: `${r.duration}s`, labels: r.labels })),
      },
    ];
    await writeFile(ruleFile, JSON.stringify({ groups }));
    await writeFile(testFile, promtoolTestFile(ruleFile));
    try {
      assert.match(await promtool('test', 'rules', testFile), /SUCCESS/);
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
  });
});
