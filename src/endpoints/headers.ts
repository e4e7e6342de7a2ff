/**
 * Custom endpoint headers at rest and in the API. Users put credentials in them, so each value is
 * sealed like a signing secret (names stay readable: they are not secret), the API shows only a
 * masked value, and PATCH merges instead of replacing, so a client never has to send back values
 * it cannot read.
 */
import { type SecretBox, SecretUnavailableError } from './secrets.js';

/** At most this many custom headers per endpoint, after a PATCH too. */
export const MAX_HEADERS = 50;

/** What the API shows for a value: the mask always starts with this. */
export const MASK_PREFIX = '••••••';

/** True for a value as GET shows it masked: PATCH sending it back keeps the stored value. */
export function isMaskedHeaderValue(value: string): boolean {
  return value.startsWith(MASK_PREFIX);
}

/**
 * A PATCH of `headers` (JSON merge patch, RFC 7396): a string sets a header, null removes it,
 * names not mentioned stay; `null` for the whole object removes them all. A value equal to the
 * masked form GET showed keeps the stored value, so GET, edit one, PATCH back works.
 */
export type HeadersPatch = Record<string, string | null> | null;

/** A PATCH that cannot be applied; the message names the header, never its value. */
export class HeadersPatchError extends Error {
  constructor(
    readonly field: string,
    message: string,
  ) {
    super(`${field}: ${message}`);
  }
}

/**
 * Merges `patch` into the stored (sealed) headers and returns the new stored object. Header
 * names are case-insensitive: setting `authorization` replaces a stored `Authorization`.
 */
export function applyHeadersPatch(
  box: SecretBox,
  stored: Record<string, string>,
  patch: HeadersPatch | undefined,
): Record<string, string> {
  if (patch === undefined) return stored;
  if (patch === null) return {};
  const result = new Map(
    Object.entries(stored).map(([name, value]) => [name.toLowerCase(), { name, value }]),
  );
  for (const [name, value] of Object.entries(patch)) {
    const lower = name.toLowerCase();
    if (value === null) {
      result.delete(lower);
    } else if (isMaskedHeaderValue(value)) {
      if (!result.has(lower)) {
        throw new HeadersPatchError(`headers.${name}`, 'is a masked value: send the real value');
      }
    } else {
      result.set(lower, { name, value: box.seal(value) });
    }
  }
  if (result.size > MAX_HEADERS) throw new HeadersPatchError('headers', `at most ${MAX_HEADERS} headers`);
  return Object.fromEntries([...result.values()].map((h) => [h.name, h.value]));
}

/** What GET and list show of a header value: never the value, at most its last four characters. */
export function maskValue(value: string): string {
  // A short value would be mostly given away by its tail, so it is masked whole.
  return value.length >= 12 ? `${MASK_PREFIX}${value.slice(-4)}` : MASK_PREFIX;
}

/** Opens every stored value for sending; throws SecretUnavailableError if one cannot be opened. */
export function openHeaders(box: SecretBox, stored: Record<string, string>): Record<string, string> {
  return Object.fromEntries(Object.entries(stored).map(([name, value]) => [name, box.open(value)]));
}

/** Names with masked values; a value no configured key opens shows as the bare mask. */
export function maskHeaders(box: SecretBox, stored: Record<string, string>): Record<string, string> {
  return Object.fromEntries(
    Object.entries(stored).map(([name, value]) => {
      try {
        return [name, maskValue(box.open(value))];
      } catch (error) {
        if (error instanceof SecretUnavailableError) return [name, MASK_PREFIX];
        throw error;
      }
    }),
  );
}
