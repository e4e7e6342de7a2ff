/**
 * Periodic background work of a dispatcher, safe to run in every process at once: the lease
 * reaper, the breaker tick (probes, parking, auto-disable), the percentile refresh, and the
 * retention pass (which runs in one process at a time).
 */
import type { Config } from '../config.js';
import type { Sql } from '../db/connect.js';
import type { DatabaseOutages } from '../db/outage.js';
import { breakerTick } from '../endpoints/breaker.js';
import { announceExpiringCertificates } from '../endpoints/certificate-expiry.js';
import { refreshHealthPercentiles } from '../endpoints/latency.js';
import { errorFields, type Logger } from '../log.js';
import type { HookpostMetrics } from '../metrics/registry.js';
import { summarizeDeadLetterMinutes } from '../ops-events/events.js';
import { type OrderingKey, unholdStrandedHeads } from '../queue/ordering.js';
import { reapExpiredLeases } from '../queue/reap.js';
import { startRetention } from '../retention/schedule.js';

/**
 * Starts the timers; `onWork` is called when something became due (wake the claim loop). Returns
 * the stopper: no task starts after it, and it resolves once the tasks still running are done,
 * so that the caller closes the pool only after their last statement (a task whose next
 * statement met a closed pool logged a spurious failure at every shutdown).
 */
export function startMaintenance(
  sql: Sql,
  config: Config,
  log: Logger,
  onWork: () => void,
  metrics?: HookpostMetrics,
  outages?: Pick<DatabaseOutages, 'absorb'>,
): () => Promise<void> {
  const policy = config.policies.breaker;
  const running = new Set<Promise<void>>();
  let stopped = false;
  const guarded = (name: string, task: () => Promise<void>) => {
    let busy = false;
    return () => {
      if (busy || stopped) return;
      busy = true;
      const run: Promise<void> = task()
        .catch((error: unknown) => {
          // An unavailable database is the outage log's to report, once per outage.
          if (!outages?.absorb(error, name))
            log.error({ task: name, ...errorFields(error) }, 'maintenance failed');
        })
        .finally(() => {
          busy = false;
          running.delete(run);
        });
      running.add(run);
    };
  };
  const reap = guarded('reaper', async () => {
    const { requeued, deadLettered, cancelled } = await reapExpiredLeases(sql, config.policies.retry, {
      opsEventsPerMinute: config.opsEventsPerMinute,
    });
    // A lease that ran out on the last attempt dead-letters the delivery here, not in the
    // completion writer, so it is counted here.
    if (deadLettered > 0) metrics?.deadLetters.inc(deadLettered);
    if (requeued + deadLettered + cancelled > 0) {
      log.warn({ requeued, deadLettered, cancelled }, 'took back deliveries whose lease expired');
      onWork();
    }
  });
  const tick = guarded('breaker', async () => {
    const { disabled, madeDue } = await breakerTick(sql, policy);
    if (disabled.length > 0)
      log.warn({ endpoints: disabled }, 'endpoints disabled after failing continuously');
    // Finished minutes whose dead letters went past the operational events' cap get their
    // summary (enqueued with a NOTIFY of its own).
    await summarizeDeadLetterMinutes(sql, config.opsEventsPerMinute);
    // Woken only for what the tick made due: an idle dispatcher does not claim every second.
    if (madeDue) onWork();
  });
  const percentiles = guarded('percentiles', () => refreshHealthPercentiles(sql));
  // Ordering keys' safety net: a settle whose process died before releasing its key's next
  // delivery leaves the key without a head; a bounded walk over the keys with held rows finds it.
  let strandedCursor: OrderingKey | null = null;
  const stranded = guarded('ordering', async () => {
    const { released, next } = await unholdStrandedHeads(sql, strandedCursor);
    strandedCursor = next;
    if (released > 0) {
      log.warn({ released }, 'released the next delivery of ordering keys left without one');
      onWork();
    }
  });
  // TLS client certificates that end within 14 days: announced once a day per endpoint.
  const certificates = guarded('certificates', async () => {
    const announced = await announceExpiringCertificates(sql);
    if (announced > 0) {
      log.warn({ endpoints: announced }, 'TLS client certificates expire within 14 days');
      onWork();
    }
  });
  // Lease expiry is checked a few times per lease; cooldowns a few times per cooldown, within
  // 50 ms .. 1 s, so fractional test cooldowns and 5-minute production ones both work.
  const timers = [
    setInterval(reap, Math.min(15_000, Math.max(100, (config.leaseSeconds * 1000) / 4))),
    setInterval(tick, Math.min(1000, Math.max(50, (config.breakerCooldownSeconds * 1000) / 5))),
    setInterval(percentiles, 30_000),
    setInterval(stranded, 5000),
    setInterval(certificates, 60_000),
  ];
  certificates();
  // Retention (src/retention/): its own timer, one pass at a time across all processes.
  const stopRetention = startRetention(sql, config, log, metrics?.retention);
  return async () => {
    stopped = true;
    for (const t of timers) clearInterval(t);
    stopRetention();
    await Promise.all(running);
  };
}
