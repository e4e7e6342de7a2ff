/**
 * The dispatcher: claims due deliveries in batches, sends them with bounded concurrency, and
 * writes results back in batches. No transaction is ever open during an HTTP call: a claim
 * commits before the first request, and results are written after the responses.
 */
import { DatabaseOutages } from '../db/outage.js';
import type { CircuitChange } from '../endpoints/lifecycle.js';
import { errorFields } from '../log.js';
import { anyLimitedEndpoints, type ClaimedDelivery, claimBatch } from '../queue/claim.js';
import { releaseClaims } from '../queue/hand-back.js';
import { WAKEUP_CHANNEL } from '../queue/wakeup.js';
import { beforeDeadline } from '../util/deadline.js';
import { AttemptRunner, type Job } from './attempt-runner.js';
import { ClaimPacer } from './claim-pacer.js';
import { CompletionWriter } from './completions.js';
import { type DispatcherDeps, dispatcherSender } from './dispatcher-deps.js';
import { EndpointCache } from './endpoint-cache.js';
import { LeaseLedger } from './lease-ledger.js';
import { LocalQueues } from './local-queues.js';
import { startMaintenance } from './maintenance.js';
import { TokenCache } from './oauth-tokens.js';
import { createOutcomeHandler } from './outcomes.js';
import type { Sender } from './sender.js';
import { WakeSignal } from './wake-signal.js';

/**
 * With due rows that this process cannot claim now, look again this soon (or when a slot frees
 * up). Parked rows are never due, so this only happens while a limit holds: the endpoint is
 * saturated here, out of rate tokens, at max_in_flight, or being claimed by another dispatcher.
 * A short, fixed re-check paces a rate-limited endpoint smoothly (a backoff made its requests
 * bunch into bursts).
 */
const BUSY_RECHECK_MS = 20;
/** After a failed claim (database unreachable) wait 100 ms, doubling, at most this long. */
const CLAIM_RETRY_MAX_MS = 1000;
/** A new rate or concurrency limit is honoured by claims within this long (ms). */
const LIMITED_RECHECK_MS = 1000;

export type { DispatcherDeps };

export class Dispatcher {
  private readonly sender: Sender;
  private readonly endpoints: EndpointCache;
  private readonly completions: CompletionWriter;
  private readonly pacer = new ClaimPacer();
  private readonly attempts: AttemptRunner;
  private readonly local: LocalQueues<Job>;
  private readonly signal = new WakeSignal();
  private inFlight = 0;
  private stopping = false;
  private waitingForCapacity = false;
  private loop: Promise<void> | undefined;
  private stopMaintenance: (() => Promise<void>) | undefined;
  private unlisten: (() => Promise<void>) | undefined;
  private idleResolvers: (() => void)[] = [];
  /** Whether limited endpoints exist (the claim's slower, locking path), re-checked each second. */
  private limited = { exists: true, checkedAt: 0 };
  /** The rows this process holds by lease token: what it finds leased to it beyond them is stranded. */
  private readonly leases: LeaseLedger;
  private readonly outages: DatabaseOutages;
  private readonly ownsOutages: boolean;

  constructor(private readonly deps: DispatcherDeps) {
    const { config } = deps;
    this.leases = new LeaseLedger(config.leaseSeconds * 1000);
    this.ownsOutages = deps.outages === undefined;
    this.outages = deps.outages ?? new DatabaseOutages(deps.sql, deps.log);
    const outcomes = createOutcomeHandler(deps.sql, config.policies.breaker, deps.log, (changes) =>
      this.onCircuitChanges(changes),
    );
    this.sender = dispatcherSender(deps);
    this.endpoints = new EndpointCache(deps.sql, deps.secrets, deps.log);
    this.completions = new CompletionWriter({
      sql: deps.sql,
      log: deps.log,
      onWritten: (batch) => {
        this.leases.settled(batch);
        // A retry written here falls due with no NOTIFY: the claim loop wakes for it itself.
        for (const r of batch) if (r.status === 'failed') this.signal.wakeAt(Date.now() + r.delayMs);
        return outcomes.afterWrite(batch);
      },
      withFailures: outcomes.withFailures,
      metrics: deps.metrics,
      opsEventsPerMinute: config.opsEventsPerMinute,
      outages: this.outages,
    });
    this.attempts = new AttemptRunner({
      sql: deps.sql,
      config,
      log: deps.log,
      sender: this.sender,
      endpoints: this.endpoints,
      completions: this.completions,
      policy: config.policies.retry,
      tokens: new TokenCache(this.sender, deps.sql, deps.secrets),
      metrics: deps.metrics,
      tracing: deps.tracing,
    });
    // One endpoint may hold at most a quarter of this process's HTTP slots (at least 4), so a
    // partner that hangs until the timeout cannot starve the others.
    this.local = new LocalQueues(Math.max(4, Math.ceil(config.dispatchConcurrency / 4)));
  }

  /** Keep up to two rounds of work locally so the HTTP slots never wait on a claim. */
  private get highWater(): number {
    return this.deps.config.dispatchConcurrency * 2;
  }

  /**
   * One of this dispatcher's pool connections closed (connect()'s onClose): the server may be
   * a new primary without this process's last results, so its stranded rows are looked for at
   * the next claim.
   */
  connectionClosed(): void {
    this.leases.reconnected();
    this.signal.wake();
  }

  async start(): Promise<void> {
    const listener = await this.deps.sql.listen(WAKEUP_CHANNEL, () => this.signal.wake());
    this.unlisten = listener.unlisten;
    await this.endpoints.start();
    this.stopMaintenance = startMaintenance(
      this.deps.sql,
      this.deps.config,
      this.deps.log,
      () => this.signal.wake(),
      this.deps.metrics,
      this.outages,
    );
    this.loop = this.claimLoop();
  }

  private async claimLoop(): Promise<void> {
    const { config, log, sql } = this.deps;
    let failures = 0;
    let logged = false;
    while (!this.stopping) {
      const { saturated, queuedElsewhere } = this.local.load();
      const room = this.highWater - queuedElsewhere - this.inFlight;
      // Claim only when a useful batch fits, instead of one row per freed slot.
      const want = Math.min(config.claimBatchSize, room);
      if (want < Math.min(config.claimBatchSize, config.dispatchConcurrency) / 4) {
        await this.waitForCapacity(config.pollIntervalMs);
        continue;
      }
      try {
        await this.leases.handBack(sql, log);
        const limitedEndpoints = await this.limitedEndpointsExist();
        const claimStartedAt = Date.now();
        const leaseToken = this.leases.next();
        const { deliveries: claimed, nextDueAt: next } = await claimBatch(this.deps.claimSql ?? sql, {
          limit: want,
          leaseSeconds: config.leaseSeconds,
          saturated,
          perEndpointLimit: this.local.perEndpointLimit,
          limitedEndpoints,
          leaseToken,
        });
        this.pacer.claimed(claimStartedAt, claimed.length);
        if (logged) log.info({ failures }, 'claiming works again');
        failures = 0;
        logged = false;
        if (claimed.length > 0) {
          // Until its rows are in the local queues, a failure (reading their endpoints) hands
          // them back by token; after that they are this process's to send.
          await this.enqueueLocal(claimed, claimStartedAt + config.leaseSeconds * 1000);
        }
        this.leases.answered(
          leaseToken,
          claimed.map((c) => c.id),
        );
        // A full batch: there may be more due right now. A short one took what it could and says
        // when the next row is due: no second claim and no query of its own per wake-up at low
        // rates, where each round trip costs more than the rows it moves.
        if (next === undefined) continue;
        const untilDue = next ? next.getTime() - Date.now() : config.pollIntervalMs;
        if (untilDue <= 0) {
          // Still due after a short claim: rows it left to a per-endpoint share, or committed
          // since. Claim again at once; after an empty claim they belong to saturated or limited
          // endpoints (a disabled endpoint's or open circuit's rows are parked, never due): look
          // again soon, or as soon as a slot frees up.
          if (claimed.length > 0) continue;
          await this.waitForCapacity(BUSY_RECHECK_MS);
        } else {
          await this.signal.sleep(Math.min(untilDue, config.pollIntervalMs));
          await this.linger(this.pacer.waitAfterWakeUp(Date.now()));
        }
      } catch (error) {
        this.leases.failed();
        failures++;
        // An outage is the outage log's to report (once); other failures get one line for the
        // first, then at 2, 4, 8 …
        if (!this.outages.absorb(error, 'claim') && (failures & (failures - 1)) === 0) {
          logged = true;
          log.error({ ...errorFields(error), failures }, 'claim failed');
        }
        await this.signal.sleep(Math.min(CLAIM_RETRY_MAX_MS, 50 * 2 ** failures));
      }
    }
  }

  private async limitedEndpointsExist(): Promise<boolean> {
    if (Date.now() - this.limited.checkedAt > LIMITED_RECHECK_MS) {
      this.limited = { exists: await anyLimitedEndpoints(this.deps.sql), checkedAt: Date.now() };
    }
    return this.limited.exists;
  }

  /** Waits `ms` whatever wakes the claim loop meanwhile (claim-pacer.ts); not after a stop. */
  private async linger(ms: number): Promise<void> {
    if (ms > 0 && !this.stopping) await new Promise((resolve) => setTimeout(resolve, ms));
  }

  private async waitForCapacity(maxMs: number): Promise<void> {
    this.waitingForCapacity = true;
    await this.signal.sleep(maxMs);
    this.waitingForCapacity = false;
  }

  private async enqueueLocal(claimed: ClaimedDelivery[], leaseEndsAt: number): Promise<void> {
    const versions = new Map(claimed.map((c) => [c.endpointId, c.endpointVersion]));
    const endpoints = await this.endpoints.getMany(versions.keys(), versions);
    for (const job of claimed)
      this.local.push(job.endpointId, { job, endpoint: endpoints.get(job.endpointId), leaseEndsAt });
    this.startSends();
  }

  /**
   * A circuit this process just opened: its claimed deliveries still waiting here are handed
   * back (parked by the queue's rule, src/queue/states.ts; not charged) instead of being sent into the outage.
   */
  private onCircuitChanges(changes: CircuitChange[]): void {
    const unsent = changes.filter((c) => c.to === 'open').flatMap((c) => this.local.remove(c.endpointId));
    if (unsent.length === 0) return;
    releaseClaims(
      this.deps.sql,
      unsent.map((u) => u.job),
    ).catch((error: unknown) =>
      this.deps.log.warn(
        { ...errorFields(error), count: unsent.length },
        'handing back claims failed; their leases will run out',
      ),
    );
  }

  private startSends(): void {
    while (this.inFlight < this.deps.config.dispatchConcurrency && !this.stopping) {
      const next = this.local.take();
      if (!next) return;
      this.inFlight++;
      void this.attempts.run(next.item).finally(() => {
        this.inFlight--;
        this.local.done(next.endpointId);
        this.startSends();
        if (this.waitingForCapacity) this.signal.wake();
        if (this.inFlight === 0) for (const resolve of this.idleResolvers.splice(0)) resolve();
      });
    }
  }

  /**
   * Graceful stop, in this order: no new claims; unsent claims handed back uncharged; in-flight
   * attempts given until the deadline (then aborted, recorded as `shutdown`, which the retry
   * policy makes due again at once); every result written (retrying while the database is
   * unreachable, for a few more seconds at most); then the HTTP pools closed. The caller closes
   * the database pool, and the embedded database, only after this resolves.
   */
  async stop(): Promise<void> {
    if (this.stopping) return;
    const { config, log } = this.deps;
    const started = Date.now();
    this.stopping = true;
    const maintenanceStopped = this.stopMaintenance?.();
    this.signal.wake();
    // Each step that waits on the database is bounded: one that never answers must not hold
    // the stop (its claims then wait out their leases, like a crash's).
    const stepsEndBy = started + config.shutdownTimeoutMs;
    const step = (work: Promise<unknown> | undefined, failed: string, fields: object = {}) =>
      beforeDeadline(
        work?.catch((error: unknown) => log.warn({ ...errorFields(error), ...fields }, failed)),
        stepsEndBy,
      );
    await beforeDeadline(this.loop, stepsEndBy);
    await step(maintenanceStopped, 'stopping the maintenance tasks failed');
    await step(this.unlisten?.(), 'unlisten failed');
    await step(this.endpoints.stop(), 'stopping the endpoint cache failed');
    const unsent = this.local.drain().map((q) => q.job);
    let released = 0;
    await step(
      releaseClaims(this.deps.sql, unsent).then((n) => {
        released = n;
      }),
      'handing back unsent claims failed; their leases will run out',
      { count: unsent.length },
    );
    if (this.inFlight > 0) {
      const idle = new Promise<void>((resolve) => this.idleResolvers.push(resolve));
      const timer = setTimeout(() => this.sender.abortAll(), config.shutdownTimeoutMs);
      await idle;
      clearTimeout(timer);
    }
    const unwritten = await this.completions.drain(started + config.shutdownTimeoutMs + 5000);
    if (unwritten > 0)
      log.error(
        { unwritten },
        'results could not be written before the deadline; those deliveries will be sent again',
      );
    await this.sender.close();
    if (this.ownsOutages) this.outages.stop();
    log.info({ released, ms: Date.now() - started }, 'dispatcher stopped');
  }
}
