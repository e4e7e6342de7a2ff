/**
 * A real HTTP CONNECT proxy for tests: Debian's tinyproxy, run in the foreground on 127.0.0.1
 * with a config written by the test (optionally with Basic proxy credentials). stop() and
 * start() take it down and bring it back on the same port, for outage tests.
 */
import { type ChildProcess, spawn } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { freePort } from '../cli/process.js';
import { waitFor } from '../helpers.js';

export interface Tinyproxy {
  /** http://[user:pass@]127.0.0.1:port, for HOOKPOST_EGRESS_PROXY. */
  url: string;
  port: number;
  /** The CONNECT targets tinyproxy logged (`127.0.0.1:4711`). */
  connects(): string[];
  start(): Promise<void>;
  stop(): Promise<void>;
  cleanup(): Promise<void>;
}

export async function startTinyproxy(auth?: { user: string; pass: string }): Promise<Tinyproxy> {
  const dir = mkdtempSync(path.join(os.tmpdir(), 'hookpost-tinyproxy-'));
  const port = await freePort();
  const logFile = path.join(dir, 'tinyproxy.log');
  const conf = path.join(dir, 'tinyproxy.conf');
  writeFileSync(
    conf,
    [
      `Port ${port}`,
      'Listen 127.0.0.1',
      'Timeout 30',
      'MaxClients 100',
      'LogLevel Connect',
      `LogFile "${logFile}"`,
      'Allow 127.0.0.1',
      ...(auth ? [`BasicAuth ${auth.user} ${auth.pass}`] : []),
      '',
    ].join('\n'),
  );
  writeFileSync(logFile, '');
  let child: ChildProcess | undefined;
  const listening = () =>
    new Promise<boolean>((resolve) => {
      const socket = net.connect(port, '127.0.0.1');
      socket.once('connect', () => {
        socket.destroy();
        resolve(true);
      });
      socket.once('error', () => resolve(false));
    });
  const proxy: Tinyproxy = {
    url: `http://${auth ? `${auth.user}:${auth.pass}@` : ''}127.0.0.1:${port}`,
    port,
    connects: () => [...readFileSync(logFile, 'utf8').matchAll(/CONNECT ([^ ]+) HTTP/g)].map((m) => m[1]!),
    async start() {
      child = spawn('tinyproxy', ['-d', '-c', conf], { stdio: 'ignore' });
      await waitFor('tinyproxy to listen', listening, 10_000);
    },
    async stop() {
      if (!child) return;
      const exited = new Promise((resolve) => child!.once('exit', resolve));
      child.kill('SIGTERM');
      await exited;
      child = undefined;
      await waitFor('tinyproxy to stop listening', async () => !(await listening()), 10_000);
    },
    async cleanup() {
      await proxy.stop();
      rmSync(dir, { recursive: true, force: true });
    },
  };
  await proxy.start();
  return proxy;
}
