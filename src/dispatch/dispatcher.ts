/**
 * The dispatcher: claims due deliveries in batches, sends them with bounded concurrency, and
 * writes results back in batches. No transaction is ever open during an HTTP call: a claim
 * commits before the first request, and results are written after the responses.
 */
import type { Config } from '../config.js';
import type { Sql } from '../db/connect.js';
import {
  type ClaimedDelivery,
  type CompletedAttempt,
  claimDue,
  disableEndpoints,
  nextDueAt,
  reapExpiredLeases,
  releaseClaims,
} from '../deliveries/queue.js';
import { nextAttempt, type RetryPolicy } from '../deliveries/retry-policy.js';
import { WAKEUP_CHANNEL } from '../deliveries/wakeup.js';
import type { SecretBox } from '../endpoints/secrets.js';
import type { Logger } from '../log.js';
import { CompletionWriter } from './completions.js';
import { type DispatchEndpoint, EndpointCache } from './endpoint-cache.js';
import { Sender } from './sender.js';
import { signatureHeader } from './signing.js';

export interface DispatcherDeps {
  sql: Sql;
  config: Config;
  log: Logger;
  secrets: SecretBox;
  userAgent: string;
}

export class Dispatcher {
  private readonly sender: Sender;
  private readonly endpoints: EndpointCache;
  private readonly completions: CompletionWriter;
  private readonly policy: RetryPolicy;
  /** Claimed, not yet started; `head` avoids O(n) shifts. */
  private queue: { job: ClaimedDelivery; endpoint: DispatchEndpoint | undefined }[] = [];
  private head = 0;
  private inFlight = 0;
  private stopping = false;
  private wakeUp: (() => void) | undefined;
  private waitingForCapacity = false;
  private loop: Promise<void> | undefined;
  private reaper: NodeJS.Timeout | undefined;
  private unlisten: (() => Promise<void>) | undefined;
  private idleResolvers: (() => void)[] = [];

  constructor(private readonly deps: DispatcherDeps) {
    const { config } = deps;
    this.sender = new Sender({
      timeoutMs: config.requestTimeoutMs,
      snippetBytes: config.responseSnippetBytes,
      allowPrivateTargets: config.allowPrivateTargets,
      connectionsPerOrigin: config.dispatchConcurrency,
      userAgent: deps.userAgent,
    });
    this.endpoints = new EndpointCache(deps.sql, deps.secrets);
    this.completions = new CompletionWriter(deps.sql, deps.log, (batch) => this.afterWrite(batch));
    this.policy = {
      baseSeconds: config.retryBaseSeconds,
      capSeconds: config.retryCapSeconds,
      maxAttempts: config.maxAttempts,
      retryAfterMaxSeconds: config.retryAfterMaxSeconds,
    };
  }

  private get queued(): number {
    return this.queue.length - this.head;
  }

  /** Keep up to two rounds of work locally so the HTTP slots never wait on a claim. */
  private get highWater(): number {
    return this.deps.config.dispatchConcurrency * 2;
  }

  async start(): Promise<void> {
    const listener = await this.deps.sql.listen(WAKEUP_CHANNEL, () => this.wake());
    this.unlisten = listener.unlisten;
    const reapEveryMs = Math.min(15_000, Math.max(100, (this.deps.config.leaseSeconds * 1000) / 4));
    this.reaper = setInterval(() => void this.reap(), reapEveryMs);
    this.loop = this.claimLoop();
  }

  private wake(): void {
    const resolve = this.wakeUp;
    this.wakeUp = undefined;
    resolve?.();
  }

  private sleep(ms: number): Promise<void> {
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
      const room = this.highWater - this.queued - this.inFlight;
      // Claim only when a useful batch fits, instead of one row per freed slot.
      const want = Math.min(config.claimBatchSize, room);
      if (want < Math.min(config.claimBatchSize, config.dispatchConcurrency) / 4) {
        this.waitingForCapacity = true;
        await this.sleep(config.pollIntervalMs);
        this.waitingForCapacity = false;
        continue;
      }
      try {
        const claimed = await claimDue(sql, want, config.leaseSeconds);
        failures = 0;
        if (claimed.length > 0) await this.enqueueLocal(claimed);
        if (claimed.length === want) continue; // likely more due right now
        const next = await nextDueAt(sql);
        const untilDue = next ? Math.max(1, next.getTime() - Date.now()) : config.pollIntervalMs;
        await this.sleep(Math.min(untilDue, config.pollIntervalMs));
      } catch (error) {
        failures++;
        log.error({ errorName: (error as Error).name, message: (error as Error).message }, 'claim failed');
        await this.sleep(Math.min(5000, 100 * 2 ** failures));
      }
    }
  }

  private async enqueueLocal(claimed: ClaimedDelivery[]): Promise<void> {
    const endpoints = await this.endpoints.getMany(claimed.map((c) => c.endpointId));
    for (const job of claimed) this.queue.push({ job, endpoint: endpoints.get(job.endpointId) });
    this.startSends();
  }

  private startSends(): void {
    while (this.inFlight < this.deps.config.dispatchConcurrency && this.queued > 0 && !this.stopping) {
      const next = this.queue[this.head]!;
      this.queue[this.head] = undefined as never;
      this.head++;
      if (this.head > 1024 && this.head * 2 > this.queue.length) {
        this.queue = this.queue.slice(this.head);
        this.head = 0;
      }
      this.inFlight++;
      void this.deliver(next.job, next.endpoint).finally(() => {
        this.inFlight--;
        this.startSends();
        if (this.waitingForCapacity) this.wake();
        if (this.inFlight === 0) for (const resolve of this.idleResolvers.splice(0)) resolve();
      });
    }
  }

  private async deliver(job: ClaimedDelivery, endpoint: DispatchEndpoint | undefined): Promise<void> {
    if (!endpoint || !endpoint.enabled) {
      // Disabled between claim and send: hand it back uncharged (it is parked by the disable).
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
    const result = await this.sender.send({ url: endpoint.url, headers, body: job.payload });
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

  /** After results are stored: 410 Gone disables the endpoint (its queued deliveries are kept). */
  private async afterWrite(batch: CompletedAttempt[]): Promise<void> {
    const gone = [...new Set(batch.filter((r) => r.statusCode === 410).map((r) => r.endpointId))];
    if (gone.length > 0) {
      await disableEndpoints(this.deps.sql, gone, 'endpoint answered 410 Gone');
      this.deps.log.warn({ endpoints: gone }, 'endpoints disabled after 410 Gone');
    }
  }

  private async reap(): Promise<void> {
    try {
      const reaped = await reapExpiredLeases(this.deps.sql, this.deps.config.maxAttempts);
      if (reaped > 0) {
        this.deps.log.warn({ reaped }, 'returned deliveries with expired leases to the queue');
        this.wake();
      }
    } catch (error) {
      this.deps.log.error(
        { errorName: (error as Error).name, message: (error as Error).message },
        'reaper failed',
      );
    }
  }

  /**
   * Graceful stop: no new claims, unsent claims handed back uncharged, in-flight attempts given
   * until the deadline (then aborted and recorded as retryable), results written, pools closed.
   */
  async stop(): Promise<void> {
    if (this.stopping) return;
    this.stopping = true;
    if (this.reaper) clearInterval(this.reaper);
    this.wake();
    await this.loop;
    await this.unlisten?.().catch(() => {});
    const unsent = this.queue.slice(this.head).map((q) => q.job);
    this.queue = [];
    this.head = 0;
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
