/**
 * A progress display for long CLI runs: a bar redrawn in place when the output is a terminal,
 * plain lines (at most one a second, plus the last) when it is a pipe or a file, so logs and
 * tests read cleanly. Small enough not to need a dependency.
 */

export interface Progress {
  update(done: number, note?: string): void;
  /** Ends the display (a final newline after a bar). */
  finish(): void;
}

const WIDTH = 30;

export function createProgress(
  out: { write(text: string): unknown; isTTY?: boolean },
  total: number,
  label: string,
): Progress {
  let lastLine = 0;
  let drawn = false;
  const text = (done: number, note: string | undefined) => {
    const percent = total === 0 ? 100 : Math.floor((done / total) * 100);
    return `${label} ${done}/${total} (${percent}%)${note ? ` ${note}` : ''}`;
  };
  return {
    update(done, note) {
      if (out.isTTY) {
        const filled = total === 0 ? WIDTH : Math.round((done / total) * WIDTH);
        const bar = `${'█'.repeat(filled)}${'░'.repeat(WIDTH - filled)}`;
        out.write(`\r\x1b[2K[${bar}] ${text(done, note)}`);
        drawn = true;
        return;
      }
      const now = Date.now();
      if (done < total && now - lastLine < 1000) return;
      lastLine = now;
      out.write(`${text(done, note)}\n`);
    },
    finish() {
      if (drawn) out.write('\n');
      drawn = false;
    },
  };
}
