/** The scheme the store routes are guarded with when the app sets a queryToken (RFC 6750): `Authorization: Bearer <queryToken>`. */
export const QUERY_AUTH_SCHEME = 'Bearer';

/** The header a client of the store routes sends: `onceflow query`, and a replica asking the key's owner. */
export function queryAuthHeaders(token: string | undefined): Record<string, string> {
  return token === undefined ? {} : { authorization: `${QUERY_AUTH_SCHEME} ${token}` };
}
