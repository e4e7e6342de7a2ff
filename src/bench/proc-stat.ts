/**
 * CPU time of other processes from Linux /proc, for the bench's cost accounting: the API and
 * dispatcher children, the receiver, and PostgreSQL (its postmaster plus every backend and
 * background process). Figures are in seconds of CPU (user + system).
 */
import { execFileSync } from 'node:child_process';
import { readdirSync, readFileSync } from 'node:fs';

/** The fields of /proc/<pid>/stat that the accounting needs; times in clock ticks. */
export interface ProcStat {
  pid: number;
  comm: string;
  ppid: number;
  utime: number;
  stime: number;
  /** CPU of children that exited and were reaped (waited for) by this process. */
  cutime: number;
  cstime: number;
}

/**
 * Parses one /proc/<pid>/stat line. The second field, comm, is the executable name in
 * parentheses and may itself contain spaces and parentheses ("(my (odd) prog)"), so the fields
 * after it are counted from the last ')' on the line, never by splitting the whole line.
 */
export function parseProcStat(line: string): ProcStat {
  const open = line.indexOf('(');
  const close = line.lastIndexOf(')');
  if (open < 1 || close < open) throw new Error('not a /proc/<pid>/stat line');
  const pid = Number(line.slice(0, open).trim());
  const rest = line
    .slice(close + 1)
    .trim()
    .split(/\s+/);
  // rest[0] is field 3 (state): field k (1-based, as in proc(5)) is rest[k - 3].
  const field = (k: number) => {
    const value = Number(rest[k - 3]);
    if (!Number.isFinite(value)) throw new Error(`/proc/<pid>/stat field ${k} is missing`);
    return value;
  };
  if (!Number.isInteger(pid)) throw new Error('not a /proc/<pid>/stat line');
  return {
    pid,
    comm: line.slice(open + 1, close),
    ppid: field(4),
    utime: field(14),
    stime: field(15),
    cutime: field(16),
    cstime: field(17),
  };
}

let ticksPerSecond: number | undefined;

/** USER_HZ, the unit of the stat times: 100 on every mainstream Linux, asked once to be sure. */
function clockTicks(): number {
  if (ticksPerSecond === undefined) {
    try {
      ticksPerSecond = Number(execFileSync('getconf', ['CLK_TCK']).toString().trim()) || 100;
    } catch {
      ticksPerSecond = 100;
    }
  }
  return ticksPerSecond;
}

/** /proc/<pid>/stat, or undefined when the process is gone (or was never visible here). */
export function readProcStat(pid: number): ProcStat | undefined {
  try {
    return parseProcStat(readFileSync(`/proc/${pid}/stat`, 'utf8'));
  } catch {
    return undefined;
  }
}

/** User + system CPU seconds of one process (all its threads); 0 when it is gone. */
export function processCpuSeconds(pid: number): number {
  const s = readProcStat(pid);
  return s ? (s.utime + s.stime) / clockTicks() : 0;
}

/** Every live process whose parent is `ppid` (one pass over /proc). */
function childrenOf(ppid: number): ProcStat[] {
  const children: ProcStat[] = [];
  for (const name of readdirSync('/proc')) {
    if (!/^\d+$/.test(name)) continue;
    const s = readProcStat(Number(name));
    if (s && s.ppid === ppid) children.push(s);
  }
  return children;
}

/**
 * CPU seconds of a whole PostgreSQL server so far: the postmaster's own time and the time of
 * the children it has reaped (cutime/cstime: backends that disconnected), plus each live
 * child's time (backends, checkpointer, WAL writer, autovacuum...). The difference between two
 * readings is what the server spent in between, whichever backends came and went.
 */
export function serverCpuSeconds(postmasterPid: number): number {
  const pm = readProcStat(postmasterPid);
  if (!pm) return 0;
  let ticks = pm.utime + pm.stime + pm.cutime + pm.cstime;
  for (const child of childrenOf(postmasterPid)) ticks += child.utime + child.stime;
  return ticks / clockTicks();
}

/**
 * The postmaster of the server a session's backend runs in: the backend's parent, when both
 * are local `postgres` processes. Undefined for a server on another machine or in another PID
 * namespace, where /proc cannot see it.
 */
export function findPostmaster(backendPid: number): number | undefined {
  const backend = readProcStat(backendPid);
  if (!backend?.comm.startsWith('postgres')) return undefined;
  const pm = readProcStat(backend.ppid);
  return pm?.comm.startsWith('postgres') ? pm.pid : undefined;
}
