/**
 * Cost accounting for `hookpost bench`: CPU seconds each part of the run used during a timed
 * phase, per delivery. On a shared machine a rate swings with the neighbours' load; the CPU a
 * delivery costs each process is far steadier, so it is the figure to optimise.
 */

/** One part of the run and a reading of its CPU seconds so far (monotonic). */
export interface CostPart {
  name: string;
  /** Counted in the "hookpost" subtotal (API, dispatchers, PostgreSQL), not a bench fixture. */
  system: boolean;
  cpuSeconds: () => number;
}

export interface CostRow {
  name: string;
  system: boolean;
  cpuSeconds: number;
}

export interface CostMeter {
  /** Takes one part's baseline again now: for a process that only joins the phase later. */
  rebase(name: string): void;
  /** Ends the phase: each part's CPU seconds since its baseline. */
  stop(): CostRow[];
}

/** Starts a timed phase: reads every part's baseline now. */
export function startCostMeter(parts: CostPart[]): CostMeter {
  const baseline = new Map(parts.map((p) => [p.name, p.cpuSeconds()]));
  return {
    rebase(name) {
      const part = parts.find((p) => p.name === name);
      if (part) baseline.set(name, part.cpuSeconds());
    },
    stop() {
      return parts.map((p) => ({
        name: p.name,
        system: p.system,
        // A process that exited reads 0: never report a negative cost for it.
        cpuSeconds: Math.max(0, p.cpuSeconds() - (baseline.get(p.name) ?? 0)),
      }));
    },
  };
}

/** The bench process's own CPU (all its threads), with microsecond resolution. */
export function ownCpuSeconds(): number {
  const { user, system } = process.cpuUsage();
  return (user + system) / 1e6;
}

const fixed = (x: number, digits: number) =>
  x.toLocaleString('en-US', { maximumFractionDigits: digits, minimumFractionDigits: digits });

/**
 * The cost table: per part its CPU seconds, µs per delivery (= ms per 1,000 deliveries) and the
 * cores it kept busy on average over the phase's wall time; then the subtotal and the total.
 */
export function formatCostTable(rows: CostRow[], deliveries: number, wallSeconds: number): string[] {
  const system = rows.filter((r) => r.system);
  const sum = (rs: CostRow[]) => rs.reduce((s, r) => s + r.cpuSeconds, 0);
  const lines: [string, number][] = rows.map((r) => [r.name, r.cpuSeconds]);
  if (system.length > 1) {
    const names = system.map((r) => r.name).join(' + ');
    const after = rows.findLastIndex((r) => r.system) + 1;
    lines.splice(after, 0, [`hookpost (${names})`, sum(system)]);
  }
  lines.push(['all', sum(rows)]);
  const width = Math.max(...lines.map(([name]) => name.length), 'component'.length);
  const row = (a: string, b: string, c: string, d: string) =>
    `${a.padEnd(width)}  ${b.padStart(7)}  ${c.padStart(12)}  ${d.padStart(5)}`;
  return [
    row('component', 'CPU s', 'µs/delivery', 'cores'),
    ...lines.map(([name, seconds]) =>
      row(
        name,
        fixed(seconds, 2),
        fixed((seconds * 1e6) / Math.max(1, deliveries), 1),
        fixed(seconds / Math.max(1e-9, wallSeconds), 2),
      ),
    ),
  ];
}
