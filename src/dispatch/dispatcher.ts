/**
 * The dispatcher: claims due deliveries in batches, sends them with bounded concurrency, and
 * writes results back in batches. No transaction is ever open during an HTTP call: a claim
 * commits before the first request, and results are written after the responses.
 */
import type { Config } from '../config.js';
import type { Sql } from '../db/connect.js';
import { anyLimitedEndpoints, type ClaimedDelivery, claimBatch } from '../deliveries/claim.js';
import { releaseClaims } from '../deliveries/queue.js';
import { WAKEUP_CHANNEL } from '../deliveries/wakeup.js';
import type { SecretBox } from '../endpoints/secrets.js';
import { errorFields, type Logger } from '../log.js';
import type { HookpostMetrics } from '../metrics/registry.js';
import { beforeDeadline } from '../util/deadline.js';
import { AttemptRunner, type Job } from './attempt-runner.js';
import { CompletionWriter } from './completions.js';
import { EndpointCache } from './endpoint-cache.js';
import { LocalQueues } from './local-queues.js';
import { startMaintenance } from './maintenance.js';
import { type CircuitChange, createOutcomeHandler } from './outcomes.js';
import { Sender } from './sender.js';
import { UnansweredClaims } from './unanswered-claims.js';
import { WakeSignal } from './wake-signal.js';

export interface DispatcherDeps {
  sql: Sql;
  /**
   * The pool claims run on (default: `sql`): in production one whose plans are pinned to index
   * and TID lookups (dispatch/pools.ts), because the claim's best plan depends on the queue's size.
   */
  claimSql?: Sql;
  config: Config;
  log: Logger;
  secrets: SecretBox;
  userAgent: string;
  metrics?: HookpostMetrics;
}

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

export class Dispatcher {
  private readonly sender: Sender;
  private readonly endpoints: EndpointCache;
  private readonly completions: CompletionWriter;
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
  /** Claims that failed after they were sent: their rows may be leased to nobody. */
  private readonly unanswered = new UnansweredClaims();

  constructor(private readonly deps: DispatcherDeps) {
    const { config } = deps;
    this.sender = new Sender({
      timeoutMs: config.requestTimeoutMs,
      snippetBytes: config.responseSnippetBytes,
      allowPrivateTargets: config.allowPrivateTargets,
      connectionsPerOrigin: config.dispatchConcurrency,
      userAgent: deps.userAgent,
      dnsServers: config.dnsServers,
      dnsMaxTtlSeconds: config.dnsMaxTtlSeconds,
    });
    this.endpoints = new EndpointCache(deps.sql, deps.secrets, deps.log);
    this.completions = new CompletionWriter(
      deps.sql,
      deps.log,
      createOutcomeHandler(deps.sql, config.policies.breaker, deps.log, (changes) =>
        this.onCircuitChanges(changes),
      ),
      deps.metrics,
      undefined,
      undefined,
      undefined,
      config.opsEventsPerMinute,
    );
    this.attempts = new AttemptRunner({
      sql: deps.sql,
      config,
      log: deps.log,
      sender: this.sender,
      endpoints: this.endpoints,
      completions: this.completions,
      policy: config.policies.retry,
    });
    // One endpoint may hold at most a quarter of this process's HTTP slots (at least 4), so a
    // partner that hangs until the timeout cannot starve the others.
    this.local = new LocalQueues(Math.max(4, Math.ceil(config.dispatchConcurrency / 4)));
  }

  /** Keep up to two rounds of work locally so the HTTP slots never wait on a claim. */
  private get highWater(): number {
    return this.deps.config.dispatchConcurrency * 2;
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
    );
    this.loop = this.claimLoop();
  }

  private async claimLoop(): Promise<void> {
    const { config, log, sql } = this.deps;
    let failures = 0;
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
        await this.unanswered.handBack(sql, log);
        const limitedEndpoints = await this.limitedEndpointsExist();
        const claimStartedAt = Date.now();
        const { deliveries: claimed, nextDueAt: next } = await claimBatch(this.deps.claimSql ?? sql, {
          limit: want,
          leaseSeconds: config.leaseSeconds,
          saturated,
          perEndpointLimit: this.local.perEndpointLimit,
          limitedEndpoints,
          leaseToken: this.unanswered.next(),
        });
        if (failures > 0) log.info({ failures }, 'claiming works again');
        failures = 0;
        if (claimed.length > 0) {
          // Until its rows are in the local queues, a failure (reading their endpoints) hands
          // them back by token; after that they are this process's to send.
          await this.enqueueLocal(claimed, claimStartedAt + config.leaseSeconds * 1000);
        }
        this.unanswered.answered();
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
        } else await this.signal.sleep(Math.min(untilDue, config.pollIntervalMs));
      } catch (error) {
        this.unanswered.failed();
        failures++;
        // One line for the first failure, then at 2, 4, 8 …: an outage must not flood the log.
        if ((failures & (failures - 1)) === 0) log.error({ ...errorFields(error), failures }, 'claim failed');
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
   * back (parked by the queue-state rule, not charged) instead of being sent into the outage.
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
    log.info({ released, ms: Date.now() - started }, 'dispatcher stopped');
  }
}
