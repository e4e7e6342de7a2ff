/**
 * The bench's child processes (API, dispatchers) log at `warn`; written straight to the terminal,
 * their lines would land in the middle of the bench's own report. They are kept here instead and
 * printed after it, readable in a terminal, so a warning is still seen and the report stays whole.
 */
import type { Readable } from 'node:stream';
import { readableLogLine } from '../log.js';
import { plural } from '../util/plural.js';

/** Lines kept at most; a flood of warnings is summarised by its count. */
const MAX_LINES = 200;

export class ChildLogs {
  private readonly lines: string[] = [];
  private dropped = 0;

  /** Keeps each line `stream` writes, labelled with the process's `role`. */
  collect(role: string, stream: Readable): void {
    let partial = '';
    stream.on('data', (chunk: Buffer) => {
      const text = partial + chunk.toString();
      const parts = text.split('\n');
      partial = parts.pop() ?? '';
      for (const line of parts) if (line.trim() !== '') this.keep(role, line);
    });
    stream.on('end', () => {
      if (partial.trim() !== '') this.keep(role, partial);
    });
  }

  private keep(role: string, line: string) {
    if (this.lines.length < MAX_LINES) this.lines.push(`${role}: ${line}`);
    else this.dropped++;
  }

  /** Prints what was kept, after the report; nothing when the children logged nothing. */
  print(out: (line: string) => void, readable: boolean): void {
    if (this.lines.length === 0) return;
    const total = this.lines.length + this.dropped;
    out(`  logs       the API and dispatcher processes logged ${plural(total, 'line')} (LOG_LEVEL=warn):`);
    for (const entry of this.lines) {
      const [role, ...rest] = entry.split(': ');
      const line = rest.join(': ');
      out(`             ${role}: ${readable ? readableLogLine(line, true) : line}`);
    }
    if (this.dropped > 0) out(`             … and ${this.dropped} more`);
  }
}
