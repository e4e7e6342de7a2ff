/**
 * Admission: what every request that makes hookpost send something must pass before it writes,
 * whichever route it came by (an enqueue, a batch, an endpoint's test event). One place, so a
 * route cannot skip the key's rate limit or the backlog bound by being written on its own.
 */
import type { Sql } from '../db/connect.js';
import type { BacklogGuard } from '../deliveries/backlog.js';
import { burstOf, takeTokens } from '../tenants/rate-limit.js';
import type { Caller } from '../tenants/scope.js';
import { plural } from '../util/plural.js';
import { HttpError } from './errors.js';

export interface Admission {
  /** 503 backlog_full when more than the limit of deliveries are waiting. */
  checkBacklog(): Promise<void>;
  /** The key's own rate (src/tenants/rate-limit.ts), shared by every API process. */
  checkRate(caller: Caller, items: number): Promise<void>;
}

export interface AdmissionDeps {
  sql: Sql;
  backlog: BacklogGuard;
  backlogLimit: number;
}

export function createAdmission(deps: AdmissionDeps): Admission {
  return {
    async checkBacklog() {
      const due = await deps.backlog.dueCount();
      if (due > deps.backlogLimit) {
        throw new HttpError(
          503,
          'backlog_full',
          `more than ${deps.backlogLimit} deliveries are waiting; try again later`,
          undefined,
          { 'retry-after': '5' },
        );
      }
    },

    async checkRate(caller, items) {
      const rate = caller.rateLimitPerSecond;
      if (rate === null) return;
      const burst = burstOf(rate);
      if (items > burst) {
        throw new HttpError(
          400,
          'batch_over_rate_limit',
          `${plural(items, 'item')} in one request ${items === 1 ? 'is' : 'are'} more than this key's limit of ${rate} per second: send smaller batches`,
        );
      }
      const decision = await takeTokens(deps.sql, caller.keyId, rate, items);
      if (!decision.granted) {
        throw new HttpError(
          429,
          'rate_limited',
          `this key may enqueue ${plural(rate, 'item')} per second`,
          { limit_per_second: rate },
          { 'retry-after': String(decision.retryAfterSeconds) },
        );
      }
    },
  };
}
