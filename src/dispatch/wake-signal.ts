/**
 * The claim loop's sleep and its wake-up (a NOTIFY, a freed slot, a stop). A wake-up that comes
 * while the loop is busy (claiming, asking for the next due time) is kept for the next sleep:
 * otherwise a NOTIFY landing between "nothing due" and "sleep" would be lost, and the new work
 * would wait for the poll interval.
 */
export class WakeSignal {
  private resolveSleep: (() => void) | undefined;
  private wokenWhileBusy = false;

  wake(): void {
    const resolve = this.resolveSleep;
    this.resolveSleep = undefined;
    if (resolve) resolve();
    else this.wokenWhileBusy = true;
  }

  /** Resolves after `ms`, or at the next wake(), or at once if one came since the last sleep. */
  sleep(ms: number): Promise<void> {
    if (this.wokenWhileBusy) {
      this.wokenWhileBusy = false;
      return Promise.resolve();
    }
    return new Promise((resolve) => {
      const timer = setTimeout(() => this.wake(), ms);
      this.resolveSleep = () => {
        clearTimeout(timer);
        resolve();
      };
    });
  }
}
