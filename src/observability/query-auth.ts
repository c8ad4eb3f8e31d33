import { createHash, timingSafeEqual } from 'node:crypto';
import { QUERY_AUTH_SCHEME } from '../runtime/queries/query-auth-header.ts';

const CREDENTIALS = new RegExp(`^${QUERY_AUTH_SCHEME}[ \\t]+(\\S+)[ \\t]*$`, 'i');
const digest = (text: string): Buffer => createHash('sha256').update(text, 'utf8').digest();

/**
 * Whether an Authorization header carries the token. The digests are compared, not the texts:
 * timingSafeEqual needs equal lengths, and comparing the texts' lengths first would tell a prober how
 * long the token is; a comparison that stops at the first differing byte would tell it the prefix.
 */
export function bearerMatches(authorization: string | undefined, token: string): boolean {
  const match = CREDENTIALS.exec(authorization ?? '');
  const presented = match?.[1] ?? '';
  // Compared even when the header is absent or malformed, so that a missing header costs the same.
  const equal = timingSafeEqual(digest(presented), digest(token));
  return match !== null && equal;
}
