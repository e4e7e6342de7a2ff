/**
 * The claim loop's sleep and its wake-up (a NOTIFY, a freed slot, a stop, a retry of this
 * process's own falling due). A wake-up that comes while the loop is busy (claiming, asking for
 * the next due time) is kept for the next sleep: otherwise a NOTIFY landing between "nothing due"
 * and "sleep" would be lost, and the new work would wait for the poll interval.
 */
export class WakeSignal {
  private resolveSleep: (() => void) | undefined;
  private wokenWhileBusy = false;
  /** The earliest time (epoch ms) something is known to fall due, from wakeAt. */
  private dueAt = Number.POSITIVE_INFINITY;
  private timer: NodeJS.Timeout | undefined;
  private sleepEndsAt = Number.POSITIVE_INFINITY;

  wake(): void {
    const resolve = this.resolveSleep;
    this.resolveSleep = undefined;
    if (resolve) resolve();
    else this.wokenWhileBusy = true;
  }

  /**
   * Wake no later than `at` (epoch ms): a retry this process just wrote falls due then, and no
   * NOTIFY comes for it. Forgotten once a sleep ends, since the claim after it asks the database
   * for the next due time anyway.
   */
  wakeAt(at: number): void {
    this.dueAt = Math.min(this.dueAt, at);
    if (this.resolveSleep && this.dueAt < this.sleepEndsAt) this.arm(this.dueAt);
  }

  /**
   * Resolves after `ms` (or at an earlier wakeAt), or at the next wake(), or at once if one came
   * since the last sleep.
   */
  sleep(ms: number): Promise<void> {
    if (this.wokenWhileBusy) {
      this.wokenWhileBusy = false;
      return Promise.resolve();
    }
    return new Promise((resolve) => {
      this.resolveSleep = () => {
        clearTimeout(this.timer);
        this.timer = undefined;
        this.sleepEndsAt = Number.POSITIVE_INFINITY;
        this.dueAt = Number.POSITIVE_INFINITY;
        resolve();
      };
      this.arm(Math.min(Date.now() + ms, this.dueAt));
    });
  }

  private arm(at: number): void {
    clearTimeout(this.timer);
    this.sleepEndsAt = at;
    this.timer = setTimeout(() => this.wake(), Math.max(0, at - Date.now()));
  }
}
