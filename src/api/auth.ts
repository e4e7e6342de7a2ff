/** Bearer-token authentication for /v1. The token is compared in constant time and never logged. */
import { createHash, timingSafeEqual } from 'node:crypto';
import type { MiddlewareHandler } from 'hono';
import { HttpError } from './errors.js';

function digest(value: string): Buffer {
  return createHash('sha256').update(value).digest();
}

/** Accepts `Authorization: Bearer <adminToken>`; the admin token carries every scope. */
export function bearerAuth(adminToken: string): MiddlewareHandler {
  const expected = digest(adminToken);
  return async (c, next) => {
    const header = c.req.header('authorization') ?? '';
    const match = /^Bearer\s+(\S+)\s*$/i.exec(header);
    if (!match)
      throw new HttpError(401, 'unauthorized', 'missing bearer token (Authorization: Bearer <token>)');
    if (!timingSafeEqual(digest(match[1]!), expected)) {
      throw new HttpError(401, 'unauthorized', 'invalid token');
    }
    c.set('actor' as never, 'admin' as never);
    await next();
  };
}
