/**
 * A real Prometheus server (the Debian `prometheus` package) for the tests: a temp config that
 * scrapes the given targets every second and loads dashboards/alerts.yml, a temp storage dir,
 * and its HTTP API. The suites using it skip on a machine without the binaries (system-binary.ts);
 * called anyway, a missing binary is an error that says how to install it.
 */
import { type ChildProcess, execFile, spawn } from 'node:child_process';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';
import { freePort } from '../cli/process.js';
import { waitFor } from '../helpers.js';
import { DASHBOARDS } from './dashboard.js';

const exec = promisify(execFile);

/** Throws a message that says how to install the tool when `binary` cannot be run. */
export async function requireBinary(binary: 'prometheus' | 'promtool'): Promise<void> {
  try {
    await exec(binary, ['--version']);
  } catch (error) {
    throw new Error(
      `${binary} is not installed or does not run (${(error as Error).message}). ` +
        'Install it with `apt-get install -y prometheus`; .ci/run does this before the tests.',
    );
  }
}

/** Runs promtool; resolves with its output, rejects with the output when it exits non-zero. */
export async function promtool(...args: string[]): Promise<string> {
  try {
    const { stdout, stderr } = await exec('promtool', args);
    return stdout + stderr;
  } catch (error) {
    const e = error as { stdout?: string; stderr?: string; message: string };
    throw new Error(`promtool ${args.join(' ')} failed:\n${e.stdout ?? ''}${e.stderr ?? e.message}`);
  }
}

interface QueryResult {
  status: 'success' | 'error';
  error?: string;
  data?: { resultType: string; result: { metric: Record<string, string>; value: [number, string] }[] };
}

export interface PrometheusServer {
  url: string;
  /** An instant query through /api/v1/query; the parsed JSON body, whatever its status. */
  query(expr: string): Promise<QueryResult>;
  /** GET a JSON API path, e.g. /api/v1/rules. */
  // biome-ignore lint/suspicious/noExplicitAny: API bodies are checked by the tests' assertions
  get(pathAndQuery: string): Promise<any>;
  stop(): Promise<void>;
}

/** Starts Prometheus scraping `targets` (host:port) every second, with the alert rules loaded. */
export async function startPrometheus(targets: string[]): Promise<PrometheusServer> {
  await requireBinary('prometheus');
  const dir = await mkdtemp(path.join(os.tmpdir(), 'hookpost-prometheus-'));
  const port = await freePort();
  // JSON is valid YAML, so the config needs no YAML writer.
  const config = {
    global: { scrape_interval: '1s', evaluation_interval: '1s', scrape_timeout: '1s' },
    rule_files: [path.join(DASHBOARDS, 'alerts.yml')],
    scrape_configs: [{ job_name: 'hookpost', static_configs: [{ targets }] }],
  };
  await writeFile(path.join(dir, 'prometheus.yml'), JSON.stringify(config));
  let output = '';
  const child: ChildProcess = spawn(
    'prometheus',
    [
      `--config.file=${path.join(dir, 'prometheus.yml')}`,
      `--storage.tsdb.path=${path.join(dir, 'data')}`,
      `--web.listen-address=127.0.0.1:${port}`,
      '--log.level=warn',
    ],
    { stdio: ['ignore', 'pipe', 'pipe'] },
  );
  child.stdout!.on('data', (d: Buffer) => {
    output += d.toString();
  });
  child.stderr!.on('data', (d: Buffer) => {
    output += d.toString();
  });
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
  const url = `http://127.0.0.1:${port}`;
  const stop = async () => {
    if (child.exitCode === null && child.signalCode === null) child.kill('SIGTERM');
    await exited;
    await rm(dir, { recursive: true, force: true });
  };
  try {
    await waitFor('Prometheus to be ready', async () => {
      if (child.exitCode !== null) throw new Error(`prometheus exited (${child.exitCode}):\n${output}`);
      return (await fetch(`${url}/-/ready`).catch(() => undefined))?.ok;
    });
  } catch (error) {
    await stop();
    throw error;
  }
  const get = async (pathAndQuery: string) => (await fetch(url + pathAndQuery)).json();
  return {
    url,
    get,
    query: (expr) => get(`/api/v1/query?query=${encodeURIComponent(expr)}`) as Promise<QueryResult>,
    stop,
  };
}
