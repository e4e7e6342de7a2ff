/**
 * The dispatcher's local buffer of claimed deliveries: one FIFO per endpoint, served round-robin,
 * and a cap on how many HTTP slots one endpoint may hold in this process. A partner that hangs
 * every request to the timeout can then occupy at most its share of the slots, and its claimed
 * backlog never sits in front of other endpoints' work.
 */
export class LocalQueues<T> {
  private readonly queues = new Map<string, T[]>();
  private readonly inFlight = new Map<string, number>();
  /** Endpoints with queued items, in service order. */
  private ring: string[] = [];
  private cursor = 0;

  constructor(private readonly perEndpointSlots: number) {}

  push(endpointId: string, item: T): void {
    let queue = this.queues.get(endpointId);
    if (!queue) {
      queue = [];
      this.queues.set(endpointId, queue);
      this.ring.push(endpointId);
    }
    queue.push(item);
  }

  /** The next item from the next endpoint (round-robin) that has a free slot, marked in flight. */
  take(): { endpointId: string; item: T } | undefined {
    for (let checked = 0; checked < this.ring.length; checked++) {
      if (this.cursor >= this.ring.length) this.cursor = 0;
      const endpointId = this.ring[this.cursor]!;
      this.cursor++;
      if ((this.inFlight.get(endpointId) ?? 0) >= this.perEndpointSlots) continue;
      const queue = this.queues.get(endpointId)!;
      const item = queue.shift()!;
      if (queue.length === 0) {
        this.queues.delete(endpointId);
        this.ring = this.ring.filter((id) => id !== endpointId);
        this.cursor = Math.max(0, this.cursor - 1);
      }
      this.inFlight.set(endpointId, (this.inFlight.get(endpointId) ?? 0) + 1);
      return { endpointId, item };
    }
    return undefined;
  }

  done(endpointId: string): void {
    const n = (this.inFlight.get(endpointId) ?? 1) - 1;
    if (n <= 0) this.inFlight.delete(endpointId);
    else this.inFlight.set(endpointId, n);
  }

  /** How many items one endpoint may hold here (in flight + queued) before we stop claiming for it. */
  get perEndpointLimit(): number {
    return this.perEndpointSlots * 2;
  }

  /**
   * Endpoints at their limit here (claim no more for them), and how many items are queued for
   * the others: a saturated endpoint's waiting items must not use up the room to claim for the
   * rest, or a hanging endpoint would stall everyone through the buffer instead of the slots.
   */
  load(): { saturated: string[]; queuedElsewhere: number } {
    const saturated: string[] = [];
    let queuedElsewhere = 0;
    const ids = new Set([...this.inFlight.keys(), ...this.queues.keys()]);
    for (const id of ids) {
      const queued = this.queues.get(id)?.length ?? 0;
      if ((this.inFlight.get(id) ?? 0) + queued >= this.perEndpointLimit) saturated.push(id);
      else queuedElsewhere += queued;
    }
    return { saturated, queuedElsewhere };
  }

  /** Removes and returns what is queued (not in flight) for one endpoint. */
  remove(endpointId: string): T[] {
    const queue = this.queues.get(endpointId);
    if (!queue) return [];
    this.queues.delete(endpointId);
    const at = this.ring.indexOf(endpointId);
    this.ring.splice(at, 1);
    if (at < this.cursor) this.cursor--;
    return queue;
  }

  /** Removes and returns everything still queued (shutdown). */
  drain(): T[] {
    const items = [...this.queues.values()].flat();
    this.queues.clear();
    this.ring = [];
    return items;
  }
}
