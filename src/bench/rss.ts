/**
 * Samples another process's resident memory (Linux /proc) so `hookpost bench --drain` can show
 * whether the dispatcher's memory stays flat while it works through a large backlog.
 */
import { readFile } from 'node:fs/promises';

export interface RssSampler {
  /** Stops sampling; returns the samples in MiB, oldest first. */
  stop(): number[];
}

async function rssMiB(pid: number): Promise<number | undefined> {
  const status = await readFile(`/proc/${pid}/status`, 'utf8').catch(() => undefined);
  const kib = status?.match(/^VmRSS:\s+(\d+) kB/m)?.[1];
  return kib === undefined ? undefined : Number(kib) / 1024;
}

export function sampleRss(pid: number, intervalMs = 250): RssSampler {
  const samples: number[] = [];
  const timer = setInterval(() => {
    void rssMiB(pid).then((mib) => {
      if (mib !== undefined) samples.push(mib);
    });
  }, intervalMs);
  timer.unref(); // a bench that fails half-way must still exit
  return {
    stop() {
      clearInterval(timer);
      return samples;
    },
  };
}
