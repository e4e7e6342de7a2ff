/**
 * The dispatcher: claims due deliveries in batches, sends them with bounded concurrency, and
 * writes results back in batches. No transaction is ever open during an HTTP call: a claim
 * commits before the first request, and results are written after the responses.
 */
import type { Config } from '../config.js';
import type { Sql } from '../db/connect.js';
import { anyLimitedEndpoints, type ClaimedDelivery, claimDue } from '../deliveries/claim.js';
import { nextDueAt, releaseClaims } from '../deliveries/queue.js';
import { nextAttempt, type RetryPolicy } from '../deliveries/retry-policy.js';
import { WAKEUP_CHANNEL } from '../deliveries/wakeup.js';
import type { SecretBox } from '../endpoints/secrets.js';
import type { Logger } from '../log.js';
import type { HookpostMetrics } from '../metrics/registry.js';
import { CompletionWriter } from './completions.js';
import { type DispatchEndpoint, EndpointCache, SECRET_UNAVAILABLE } from './endpoint-cache.js';
import { LocalQueues } from './local-queues.js';
import { startMaintenance } from './maintenance.js';
import { createOutcomeHandler } from './outcomes.js';
import { Sender, type SendResult } from './sender.js';
import { signatureHeader } from './signing.js';

export interface DispatcherDeps {
  sql: Sql;
  config: Config;
  log: Logger;
  secrets: SecretBox;
  userAgent: string;
  metrics?: HookpostMetrics;
}

interface Job {
  job: ClaimedDelivery;
  endpoint: DispatchEndpoint | undefined;
}

/** With due rows only for saturated or rate-limited endpoints, re-check this often (ms). */
const BUSY_RECHECK_MS = 20;
/** A new rate or concurrency limit is honoured by claims within this long (ms). */
const LIMITED_RECHECK_MS = 1000;

export class Dispatcher {
  private readonly sender: Sender;
  private readonly endpoints: EndpointCache;
  private readonly completions: CompletionWriter;
  private readonly policy: RetryPolicy;
  private readonly local: LocalQueues<Job>;
  private inFlight = 0;
  private stopping = false;
  private wakeUp: (() => void) | undefined;
  private wokenWhileBusy = false;
  private waitingForCapacity = false;
  private loop: Promise<void> | undefined;
  private stopMaintenance: (() => void) | undefined;
  private unlisten: (() => Promise<void>) | undefined;
  private idleResolvers: (() => void)[] = [];
  /** Whether limited endpoints exist (the claim's slower, locking path), re-checked each second. */
  private limited = { exists: true, checkedAt: 0 };

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
      createOutcomeHandler(deps.sql, config, deps.log),
      deps.metrics,
    );
    this.policy = {
      baseSeconds: config.retryBaseSeconds,
      capSeconds: config.retryCapSeconds,
      maxAttempts: config.maxAttempts,
      retryAfterMaxSeconds: config.retryAfterMaxSeconds,
    };
    // One endpoint may hold at most a quarter of this process's HTTP slots (at least 4), so a
    // partner that hangs until the timeout cannot starve the others.
    this.local = new LocalQueues(Math.max(4, Math.ceil(config.dispatchConcurrency / 4)));
  }

  /** Keep up to two rounds of work locally so the HTTP slots never wait on a claim. */
  private get highWater(): number {
    return this.deps.config.dispatchConcurrency * 2;
  }

  async start(): Promise<void> {
    const listener = await this.deps.sql.listen(WAKEUP_CHANNEL, () => this.wake());
    this.unlisten = listener.unlisten;
    await this.endpoints.start();
    this.stopMaintenance = startMaintenance(
      this.deps.sql,
      this.deps.config,
      this.deps.log,
      () => this.wake(),
      this.deps.metrics,
    );
    this.loop = this.claimLoop();
  }

  private wake(): void {
    const resolve = this.wakeUp;
    this.wakeUp = undefined;
    // A wake-up while the loop is busy (claiming, asking for the next due time) is kept for the
    // next sleep: otherwise a NOTIFY landing between "nothing due" and "sleep" is lost and the
    // new work waits for the poll interval.
    if (resolve) resolve();
    else this.wokenWhileBusy = true;
  }

  private sleep(ms: number): Promise<void> {
    if (this.wokenWhileBusy) {
      this.wokenWhileBusy = false;
      return Promise.resolve();
    }
    return new Promise((resolve) => {
      const timer = setTimeout(() => this.wake(), ms);
      this.wakeUp = () => {
        clearTimeout(timer);
        resolve();
      };
    });
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
        const claimed = await claimDue(sql, {
          limit: want,
          leaseSeconds: config.leaseSeconds,
          saturated,
          perEndpointLimit: this.local.perEndpointLimit,
          limitedEndpoints: await this.limitedEndpointsExist(),
        });
        failures = 0;
        if (claimed.length > 0) {
          await this.enqueueLocal(claimed);
          continue; // there may be more due right now
        }
        const next = await nextDueAt(sql);
        const untilDue = next ? next.getTime() - Date.now() : config.pollIntervalMs;
        // Due rows that the claim did not take belong to saturated, limited or broken
        // endpoints: look again soon, or as soon as a slot frees up.
        if (untilDue <= 0) await this.waitForCapacity(BUSY_RECHECK_MS);
        else await this.sleep(Math.min(untilDue, config.pollIntervalMs));
      } catch (error) {
        failures++;
        log.error({ errorName: (error as Error).name, message: (error as Error).message }, 'claim failed');
        await this.sleep(Math.min(5000, 100 * 2 ** failures));
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
    await this.sleep(maxMs);
    this.waitingForCapacity = false;
  }

  private async enqueueLocal(claimed: ClaimedDelivery[]): Promise<void> {
    const endpoints = await this.endpoints.getMany(claimed.map((c) => c.endpointId));
    for (const job of claimed)
      this.local.push(job.endpointId, { job, endpoint: endpoints.get(job.endpointId) });
    this.startSends();
  }

  private startSends(): void {
    while (this.inFlight < this.deps.config.dispatchConcurrency && !this.stopping) {
      const next = this.local.take();
      if (!next) return;
      this.inFlight++;
      void this.deliver(next.item.job, next.item.endpoint).finally(() => {
        this.inFlight--;
        this.local.done(next.endpointId);
        this.startSends();
        if (this.waitingForCapacity) this.wake();
        if (this.inFlight === 0) for (const resolve of this.idleResolvers.splice(0)) resolve();
      });
    }
  }

  private async deliver(job: ClaimedDelivery, claimedWith: DispatchEndpoint | undefined): Promise<void> {
    // A change announced while the job waited in the local buffer (rotation, disable) applies.
    const endpoint = claimedWith && (await this.endpoints.fresh(job.endpointId).catch(() => claimedWith));
    if (!endpoint?.enabled) {
      // Disabled between claim and send: hand it back uncharged and parked.
      await releaseClaims(this.deps.sql, [job], 'park').catch(() => {});
      return;
    }
    const startedAt = new Date();
    const timestamp = Math.floor(startedAt.getTime() / 1000);
    const headers: Record<string, string> = {
      ...endpoint.headers,
      'content-type': 'application/json',
      'webhook-id': job.messageId,
      'webhook-timestamp': String(timestamp),
      'webhook-signature': signatureHeader(endpoint.keys, job.messageId, timestamp, job.payload),
    };
    // An endpoint whose secrets cannot be decrypted fails alone, as a retryable attempt that
    // sends nothing: its deliveries back off and its breaker parks them until the key is back.
    const result: SendResult = endpoint.unavailable
      ? {
          outcome: { kind: 'retryable', errorClass: SECRET_UNAVAILABLE },
          durationMs: 0,
          snippet: null,
          error: endpoint.unavailable,
        }
      : await this.sender.send({ url: endpoint.url, headers, body: job.payload });
    const { outcome } = result;
    const decision =
      outcome.kind === 'retryable' && outcome.errorClass === 'shutdown'
        ? ({ status: 'failed', delayMs: 0 } as const)
        : nextAttempt(job.attempt, outcome, this.policy, Math.random);
    this.completions.add({
      deliveryId: job.id,
      endpointId: job.endpointId,
      leaseToken: job.leaseToken,
      attempt: job.attempt,
      startedAt,
      durationMs: result.durationMs,
      statusCode: outcome.statusCode ?? null,
      outcome: outcome.kind,
      errorClass: outcome.kind === 'success' ? null : outcome.errorClass,
      error: result.error,
      snippet: result.snippet,
      status: decision.status,
      delayMs: decision.status === 'failed' ? decision.delayMs : 0,
    });
  }

  /**
   * Graceful stop: no new claims, unsent claims handed back uncharged, in-flight attempts given
   * until the deadline (then aborted and recorded as retryable), results written, pools closed.
   */
  async stop(): Promise<void> {
    if (this.stopping) return;
    this.stopping = true;
    this.stopMaintenance?.();
    this.wake();
    await this.loop;
    await this.unlisten?.().catch(() => {});
    await this.endpoints.stop().catch(() => {});
    const unsent = this.local.drain().map((q) => q.job);
    const released = await releaseClaims(this.deps.sql, unsent).catch(() => 0);
    if (this.inFlight > 0) {
      const idle = new Promise<void>((resolve) => this.idleResolvers.push(resolve));
      const timer = setTimeout(() => this.sender.abortAll(), this.deps.config.shutdownTimeoutMs);
      await idle;
      clearTimeout(timer);
    }
    await this.completions.drain();
    await this.sender.close();
    this.deps.log.info({ released }, 'dispatcher stopped');
  }
}
