/**
 * Re-encryption of stored secrets under the current HOOKPOST_SECRET_KEY: signing secrets and
 * Ed25519 private keys sealed under an older key (HOOKPOST_SECRET_KEY_PREVIOUS) or before key ids
 * existed, values stored in plain text before a key was set, and custom header values. Runs at
 * start in the background, in small batches, each row written only if nobody changed it
 * meanwhile, so every process may run it at once. A value no configured key opens is left as it
 * is (its endpoint fails with `secret_unavailable`) and counted.
 */
import type { Sql } from '../db/connect.js';
import { errorFields, type Logger } from '../log.js';
import { mapSealed, type StoredCredentials } from './credentials.js';
import type { SecretBox } from './secrets.js';

export interface ResealResult {
  resealed: number;
  /** Values that no configured key opens: left untouched. */
  unavailable: number;
}

const BATCH = 100;

function reseal(box: SecretBox, stored: string, result: ResealResult): string | undefined {
  try {
    return box.seal(box.open(stored));
  } catch {
    result.unavailable++;
    return undefined;
  }
}

/** Signing secrets, keyset-paged by primary key so a value that cannot be opened is passed once. */
async function resealSigningSecrets(sql: Sql, box: SecretBox, result: ResealResult, stopped: () => boolean) {
  const current = `v2:${box.currentKeyId}:`;
  // Timestamps travel as text: a Date would drop the microseconds of the primary key.
  let after = { id: '', at: '-infinity' };
  while (!stopped()) {
    const rows = await sql<{ endpoint_id: string; created_at: string; secret: string }[]>`
      SELECT endpoint_id, created_at::text AS created_at, secret FROM endpoint_secrets
      WHERE (endpoint_id, created_at) > (${after.id}, ${after.at}::text::timestamptz)
        AND NOT starts_with(secret, ${current})
        AND (expires_at IS NULL OR expires_at > now())
      ORDER BY endpoint_id, created_at LIMIT ${BATCH}`;
    if (rows.length === 0) return;
    after = { id: rows.at(-1)!.endpoint_id, at: rows.at(-1)!.created_at };
    const changes = rows.flatMap((r) => {
      const sealed = reseal(box, r.secret, result);
      return sealed ? [{ ...r, sealed }] : [];
    });
    if (changes.length === 0) continue;
    // Compare-and-set on the old value: a rotation or another process's reseal wins.
    const updated = await sql`
      UPDATE endpoint_secrets s SET secret = c.sealed
      FROM unnest(${changes.map((c) => c.endpoint_id)}::text[], ${changes.map((c) => c.created_at)}::text[]::timestamptz[],
                  ${changes.map((c) => c.secret)}::text[], ${changes.map((c) => c.sealed)}::text[])
        AS c(endpoint_id, created_at, old, sealed)
      WHERE s.endpoint_id = c.endpoint_id AND s.created_at = c.created_at AND s.secret = c.old`;
    result.resealed += updated.count;
  }
}

/** Custom header values, one endpoint row at a time within a batch statement. */
async function resealHeaders(sql: Sql, box: SecretBox, result: ResealResult, stopped: () => boolean) {
  const current = `v2:${box.currentKeyId}:`;
  let after = '';
  while (!stopped()) {
    const rows = await sql<{ id: string; headers: Record<string, string> }[]>`
      SELECT id, headers FROM endpoints
      WHERE id > ${after} AND headers <> '{}'::jsonb
        AND EXISTS (SELECT 1 FROM jsonb_each_text(headers) h WHERE NOT starts_with(h.value, ${current}))
      ORDER BY id LIMIT ${BATCH}`;
    if (rows.length === 0) return;
    after = rows.at(-1)!.id;
    for (const row of rows) {
      let changed = 0;
      const headers: Record<string, string> = {};
      for (const [name, value] of Object.entries(row.headers)) {
        const sealed = box.isCurrent(value) ? undefined : reseal(box, value, result);
        if (sealed !== undefined) changed++;
        headers[name] = sealed ?? value;
      }
      if (changed === 0) continue;
      const updated = await sql`
        UPDATE endpoints SET headers = ${sql.json(headers)}
        WHERE id = ${row.id} AND headers = ${sql.json(row.headers)}`;
      if (updated.count > 0) result.resealed += changed;
    }
  }
}

/**
 * `auth`, `tls` and legacy-signature secrets: rows with a sealed value not under the current key
 * (found by a text search of the three columns, which only sealed values can match), each row
 * written only if its three columns are still as read.
 */
async function resealCredentials(sql: Sql, box: SecretBox, result: ResealResult, stopped: () => boolean) {
  const current = `v2:${box.currentKeyId}:`;
  const sealedValue = '"(plain:|v1:|v2:)';
  let after = '';
  while (!stopped()) {
    const rows = await sql<({ id: string } & StoredCredentials)[]>`
      SELECT id, auth, tls, legacy_signature FROM endpoints
      WHERE id > ${after} AND (auth IS NOT NULL OR tls IS NOT NULL OR legacy_signature IS NOT NULL)
        AND replace(concat(auth::text, tls::text, legacy_signature::text), ${`"${current}`}, '') ~ ${sealedValue}
      ORDER BY id LIMIT ${BATCH}`;
    if (rows.length === 0) return;
    after = rows.at(-1)!.id;
    for (const row of rows) {
      const { credentials, changed } = mapSealed(row, (sealed) =>
        box.isCurrent(sealed) ? undefined : reseal(box, sealed, result),
      );
      if (changed === 0) continue;
      const json = (v: object | null) => (v === null ? null : sql.json(v as never));
      const updated = await sql`
        UPDATE endpoints SET auth = ${json(credentials.auth)}, tls = ${json(credentials.tls)},
          legacy_signature = ${json(credentials.legacy_signature)}
        WHERE id = ${row.id} AND auth IS NOT DISTINCT FROM ${json(row.auth)}
          AND tls IS NOT DISTINCT FROM ${json(row.tls)}
          AND legacy_signature IS NOT DISTINCT FROM ${json(row.legacy_signature)}`;
      if (updated.count > 0) result.resealed += changed;
    }
  }
}

/** One full pass over secrets, headers and credentials. Without a current key there is nothing to do. */
export async function resealStoredSecrets(
  sql: Sql,
  box: SecretBox,
  stopped: () => boolean = () => false,
): Promise<ResealResult> {
  const result: ResealResult = { resealed: 0, unavailable: 0 };
  if (box.currentKeyId === null) return result;
  await resealSigningSecrets(sql, box, result, stopped);
  await resealHeaders(sql, box, result, stopped);
  await resealCredentials(sql, box, result, stopped);
  // OAuth2 tokens are short-lived copies of what a token endpoint hands out: one sealed under an
  // older key is dropped (and fetched again when needed) rather than re-sealed.
  if (!stopped())
    await sql`DELETE FROM endpoint_oauth_tokens WHERE NOT starts_with(access_token, ${`v2:${box.currentKeyId}:`})`;
  return result;
}

/** Runs one pass in the background; `stop()` ends it between batches and waits for it. */
export function startResealing(sql: Sql, box: SecretBox, log: Logger): { stop(): Promise<void> } {
  let stopping = false;
  const run = resealStoredSecrets(sql, box, () => stopping).then(
    ({ resealed, unavailable }) => {
      if (box.currentKeyId === null || stopping) return;
      // Once a pass finishes with nothing left under an older key (here or in any process),
      // HOOKPOST_SECRET_KEY_PREVIOUS can be dropped.
      log.info({ keyId: box.currentKeyId, resealed, unavailable }, 're-encryption pass finished');
      if (unavailable > 0) {
        log.error(
          { unavailable },
          'stored secrets that no configured key decrypts: add their key to HOOKPOST_SECRET_KEY_PREVIOUS',
        );
      }
    },
    (error: unknown) => log.error(errorFields(error), 're-encryption failed'),
  );
  return {
    async stop() {
      stopping = true;
      await run;
    },
  };
}
