import { createHash, timingSafeEqual } from 'node:crypto';

/** The scheme store queries are guarded with (RFC 6750): `Authorization: Bearer <queryToken>`. */
export const QUERY_AUTH_SCHEME = 'Bearer';

/** The header a client of the store routes sends: `onceflow query`, and a replica routing a query to the key's owner. */
export function queryAuthHeaders(token: string | undefined): Record<string, string> {
  return token === undefined ? {} : { authorization: `${QUERY_AUTH_SCHEME} ${token}` };
}

const digest = (text: string): Buffer => createHash('sha256').update(text, 'utf8').digest();

/**
 * Whether an Authorization header carries the token. The digests are compared, not the texts:
 * timingSafeEqual needs equal lengths, and comparing the texts' lengths first would tell a prober how
 * long the token is; a comparison that stops at the first differing byte would tell it the prefix.
 */
export function bearerMatches(authorization: string | undefined, token: string): boolean {
  const match = /^Bearer[ \t]+(\S+)[ \t]*$/i.exec(authorization ?? '');
  const presented = match?.[1] ?? '';
  // Compared even when the header is absent or malformed, so that a missing header costs the same.
  const equal = timingSafeEqual(digest(presented), digest(token));
  return match !== null && equal;
}
