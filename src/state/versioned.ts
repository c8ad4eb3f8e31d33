import { OnceflowError } from '../errors.ts';

/**
 * Versioned key-value stores (Kafka Streams' KIP-889): per key, every value it had within the
 * history retention, each valid from its record's timestamp until the next newer version's.
 *
 * Why a key's whole history is one value of an ordinary key-value store, and not one entry per
 * version: the store then needs nothing of its own to commit, roll back, undo a dead-lettered
 * record's writes, log and restore (TransactionalStore does all of it), and the compacted changelog
 * keeps every version a key still has, where one record per version would lose all but the last to
 * compaction. A key's history is bounded by the retention, so rewriting it on each update is cheap.
 *
 * Layout, newest version first: `<validFrom: int64 BE><length: int32 BE, -1 for a deletion><value bytes>`, repeated.
 */
export interface Version {
  readonly validFrom: number;
  /** null: the key was deleted at `validFrom`. */
  readonly value: Buffer | null;
}

export interface VersionedStoreSpec {
  /** How far behind stream time `get(key, asOf)` answers exactly; older versions are dropped. */
  readonly historyRetentionMs: number;
}

/** Bytes of a versioned store's value that are not a version history (a store written by another kind of stage). */
export class VersionHistoryInvalidError extends OnceflowError {
  readonly code = 'VERSION_HISTORY_INVALID';
}

const HEADER_BYTES = 12;
const DELETED = -1;

function invalid(detail: string): never {
  throw new VersionHistoryInvalidError(`a versioned store's value is not a version history: ${detail}`);
}

export function encodeHistory(versions: readonly Version[]): Buffer {
  const parts: Buffer[] = [];
  for (const v of versions) {
    const head = Buffer.allocUnsafe(HEADER_BYTES);
    head.writeBigInt64BE(BigInt(v.validFrom), 0);
    head.writeInt32BE(v.value === null ? DELETED : v.value.length, 8);
    parts.push(head);
    if (v.value !== null) parts.push(v.value);
  }
  return Buffer.concat(parts);
}

/** Newest first. */
export function decodeHistory(bytes: Buffer): Version[] {
  const out: Version[] = [];
  for (let at = 0; at < bytes.length; ) {
    if (at + HEADER_BYTES > bytes.length) invalid(`a version header runs past the end (${bytes.length} bytes)`);
    const validFrom = Number(bytes.readBigInt64BE(at));
    const length = bytes.readInt32BE(at + 8);
    at += HEADER_BYTES;
    if (length === DELETED) {
      out.push({ validFrom, value: null });
      continue;
    }
    if (length < 0 || at + length > bytes.length) invalid(`a version of ${length} bytes runs past the end (${bytes.length} bytes)`);
    out.push({ validFrom, value: bytes.subarray(at, at + length) });
    at += length;
  }
  return out;
}

/** The version valid at `asOf` (the newest one from `asOf` or before), if the history has one. */
export function versionAsOf(versions: readonly Version[], asOf: number): Version | undefined {
  return versions.find((v) => v.validFrom <= asOf);
}

/** The key's latest value; undefined when it has none or was last deleted. */
export function latestValue(bytes: Buffer): Buffer | undefined {
  return decodeHistory(bytes)[0]?.value ?? undefined;
}

/** The key's value at `asOf`, or undefined: none then, deleted then, or `asOf` behind the retention (`horizon`), which the history no longer answers for. */
export function valueAsOf(bytes: Buffer, asOf: number, horizon: number): Buffer | undefined {
  if (asOf < horizon) return undefined;
  return versionAsOf(decodeHistory(bytes), asOf)?.value ?? undefined;
}

export type VersionedPut =
  /** Older than the retention: not stored (Kafka Streams drops such a put too). */
  | { readonly stored: false }
  /** `history` undefined: nothing is left to keep (the key's row goes); `latest`: the new version is the newest, so the table's value changed. */
  | { readonly stored: true; readonly latest: boolean; readonly history: readonly Version[] | undefined };

/**
 * Adds `version` to a key's history (newest first): an out-of-order one goes in its place, not over
 * the latest; one with the timestamp of an existing version replaces it. Versions that stopped being
 * valid at or before `horizon` (stream time minus the retention) are dropped, and so are deletions
 * at the old end from the horizon on.
 */
export function putVersion(history: readonly Version[], version: Version, horizon: number): VersionedPut {
  if (version.validFrom < horizon) return { stored: false };
  const kept = history.filter((v) => v.validFrom !== version.validFrom);
  const at = kept.findIndex((v) => v.validFrom < version.validFrom);
  const versions = at < 0 ? [...kept, version] : [...kept.slice(0, at), version, ...kept.slice(at)];
  return { stored: true, latest: versions[0] === version, history: prune(versions, horizon) };
}

function prune(versions: readonly Version[], horizon: number): readonly Version[] | undefined {
  let end = versions.length;
  // versions[i] is valid until versions[i - 1].validFrom; the newest, until the next update.
  while (end > 1 && versions[end - 2]!.validFrom <= horizon) end--;
  // A deletion at the old end answers as no version would, but only once nothing can be put before it:
  // until then it still ends the validity of an out-of-order version put behind it.
  while (end > 0 && versions[end - 1]!.value === null && versions[end - 1]!.validFrom <= horizon) end--;
  return end === 0 ? undefined : versions.slice(0, end);
}
