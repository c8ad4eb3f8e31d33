import { OnceflowError } from '../errors.ts';
import type { Serde, SerdeContext } from '../serdes/serde.ts';
import { splitWindowStoreKey, windowStoreKey } from './windowed.ts';
import { StoreKeys } from './store-keys.ts';
import type { KeyValueStore } from './store.ts';
import { latestValue, valueAsOf, type VersionedStoreSpec } from './versioned.ts';

/** What a query needs to know of a store: its serdes and, for a window store, the window size. */
export interface QueryableStoreSpec {
  readonly name: string;
  readonly changelogTopic: string;
  readonly keySerde: Serde<unknown>;
  readonly valueSerde: Serde<unknown>;
  readonly window?: { readonly sizeMs: number };
  /** A versioned table's store: each value is a key's history, and reads answer its latest version. */
  readonly versioned?: VersionedStoreSpec;
}

/** Entries a scan returns at most, whatever the caller asks: a scan reads the store on the worker's event loop. */
export const MAX_SCAN_LIMIT = 1_000;
export const DEFAULT_SCAN_LIMIT = 100;

export class StoreQueryError extends OnceflowError {
  constructor(
    readonly code: 'QUERY_KEY_INVALID' | 'QUERY_NOT_WINDOWED' | 'QUERY_WINDOWED' | 'QUERY_RANGE_INVALID' | 'QUERY_NOT_VERSIONED',
    message: string,
  ) {
    super(message);
  }
}

export interface ScanOptions {
  /** Keys whose serialized bytes start with those of `prefix` (for string keys: a text prefix). */
  readonly prefix?: unknown;
  /** Keys from `from` to `to`, both inclusive, by their serialized bytes. */
  readonly from?: unknown;
  readonly to?: unknown;
  readonly limit?: number;
}

export interface KeyValueEntry {
  readonly key: unknown;
  readonly value: unknown;
}

export interface WindowEntry {
  readonly key: unknown;
  readonly start: number;
  /** Exclusive. */
  readonly end: number;
  readonly value: unknown;
}

/** A queried key serialized as the store and the partitioner see it; a key its serde refuses is the caller's error. */
export function queryKeyBytes(spec: QueryableStoreSpec, key: unknown, keys = new StoreKeys(spec)): Buffer {
  try {
    return keys.inner(key);
  } catch (e) {
    throw new StoreQueryError('QUERY_KEY_INVALID', `store ${spec.name}: the key does not serialize with its serde ${spec.keySerde.name}: ${e instanceof Error ? e.message : String(e)}`);
  }
}

/**
 * Reads one task's committed state of a store, decoded: never the writes of the open transaction
 * (the caller hands in the committed store, TransactionalStore.committed). Shared by the worker's
 * interactive queries and the test driver.
 */
export class StoreReader {
  readonly #keys: StoreKeys;
  readonly #valueCtx: SerdeContext;

  constructor(
    readonly spec: QueryableStoreSpec,
    private readonly committed: KeyValueStore,
  ) {
    this.#keys = new StoreKeys(spec);
    this.#valueCtx = { topic: spec.changelogTopic, role: 'value' };
  }

  /** The serialized form of a key, as the store and the partitioner see it. */
  keyBytes(key: unknown): Buffer {
    return queryKeyBytes(this.spec, key, this.#keys);
  }

  get(key: unknown): unknown {
    if (this.spec.window) throw new StoreQueryError('QUERY_WINDOWED', `store ${this.spec.name} is windowed: fetch a key's windows instead`);
    const v = this.committed.get(this.keyBytes(key));
    return v === undefined ? undefined : this.#value(v);
  }

  /** A versioned store's value of `key` at `asOf`, as long as its history still holds that time. */
  getAsOf(key: unknown, asOf: number): unknown {
    if (!this.spec.versioned) throw new StoreQueryError('QUERY_NOT_VERSIONED', `store ${this.spec.name} keeps no history: get the key's latest value instead`);
    if (!Number.isSafeInteger(asOf)) throw new StoreQueryError('QUERY_RANGE_INVALID', `store ${this.spec.name}: asOf must be a timestamp in milliseconds, got ${asOf}`);
    const history = this.committed.get(this.keyBytes(key));
    const v = history === undefined ? undefined : valueAsOf(history, asOf, Number.NEGATIVE_INFINITY);
    return v === undefined ? undefined : this.spec.valueSerde.deserialize(v, this.#valueCtx);
  }

  /** Entries by key bytes in order, at most `limit` (capped at MAX_SCAN_LIMIT); `more` when the scan stopped there. */
  scan(opts: ScanOptions = {}): { entries: KeyValueEntry[]; more: boolean } {
    if (this.spec.window) throw new StoreQueryError('QUERY_WINDOWED', `store ${this.spec.name} is windowed: fetch a key's windows instead`);
    const limit = scanLimit(opts.limit);
    const prefix = opts.prefix === undefined ? undefined : this.keyBytes(opts.prefix);
    const from = opts.from === undefined ? undefined : this.keyBytes(opts.from);
    const to = opts.to === undefined ? undefined : this.keyBytes(opts.to);
    if (from && to && Buffer.compare(from, to) > 0) throw new StoreQueryError('QUERY_RANGE_INVALID', `store ${this.spec.name}: the range starts after it ends`);
    const hits: (readonly [Buffer, Buffer])[] = [];
    for (const entry of this.committed.entries()) {
      const k = entry[0];
      if (this.spec.versioned && latestValue(entry[1]) === undefined) continue;
      if (prefix && !startsWith(k, prefix)) continue;
      if (from && Buffer.compare(k, from) < 0) continue;
      if (to && Buffer.compare(k, to) > 0) continue;
      hits.push(entry);
    }
    hits.sort((a, b) => Buffer.compare(a[0], b[0]));
    return {
      entries: hits.slice(0, limit).map(([k, v]) => ({ key: this.#keys.decodeInner(k), value: this.#value(v) })),
      more: hits.length > limit,
    };
  }

  /** The windows of `key` that start within [fromMs, toMs], oldest first. */
  fetch(key: unknown, fromMs = 0, toMs = Number.MAX_SAFE_INTEGER): WindowEntry[] {
    const window = this.spec.window;
    if (!window) throw new StoreQueryError('QUERY_NOT_WINDOWED', `store ${this.spec.name} is not windowed: get the key instead`);
    const inner = this.keyBytes(key);
    const out: WindowEntry[] = [];
    for (const [k, v] of this.committed.entries()) {
      if (k.length !== inner.length + 8 || !startsWith(k, inner)) continue;
      const { start } = splitWindowStoreKey(k);
      if (start < fromMs || start > toMs) continue;
      out.push({ key, start, end: start + window.sizeMs, value: this.#value(v) });
    }
    return out.sort((a, b) => a.start - b.start);
  }

  /** One window's value, by its start. */
  getWindow(key: unknown, start: number): unknown {
    if (!this.spec.window) throw new StoreQueryError('QUERY_NOT_WINDOWED', `store ${this.spec.name} is not windowed: get the key instead`);
    const v = this.committed.get(windowStoreKey(this.keyBytes(key), start));
    return v === undefined ? undefined : this.#value(v);
  }

  /** A stored value decoded; a versioned store's, its latest version (undefined: the key was last deleted). */
  #value(bytes: Buffer): unknown {
    if (!this.spec.versioned) return this.spec.valueSerde.deserialize(bytes, this.#valueCtx);
    const latest = latestValue(bytes);
    return latest === undefined ? undefined : this.spec.valueSerde.deserialize(latest, this.#valueCtx);
  }
}

/** One scan over several tasks' parts of a store (each sorted and bounded), merged in key order and bounded again. */
export function scanAll(readers: readonly StoreReader[], opts: ScanOptions = {}): { entries: KeyValueEntry[]; more: boolean } {
  const limit = scanLimit(opts.limit);
  const parts = readers.map((r) => ({ reader: r, answer: r.scan(opts) }));
  const merged = parts.flatMap(({ reader, answer }) => answer.entries.map((e) => ({ e, bytes: reader.keyBytes(e.key) })));
  merged.sort((a, b) => Buffer.compare(a.bytes, b.bytes));
  return { entries: merged.slice(0, limit).map((m) => m.e), more: merged.length > limit || parts.some((p) => p.answer.more) };
}

function scanLimit(limit: number | undefined): number {
  if (limit === undefined) return DEFAULT_SCAN_LIMIT;
  if (!Number.isInteger(limit) || limit < 1) throw new StoreQueryError('QUERY_RANGE_INVALID', `a scan limit must be a positive integer, got ${limit}`);
  return Math.min(limit, MAX_SCAN_LIMIT);
}

function startsWith(data: Buffer, prefix: Buffer): boolean {
  return data.length >= prefix.length && data.compare(prefix, 0, prefix.length, 0, prefix.length) === 0;
}

/**
 * A key as text (a URL path segment, a CLI argument) to the store's key type: a string serde's key is
 * the text itself, any other is read as JSON (a number, an object, a quoted string).
 */
export function parseKeyText(text: string, spec: QueryableStoreSpec): unknown {
  if (spec.keySerde.name === 'string') return text;
  try {
    return JSON.parse(text) as unknown;
  } catch {
    throw new StoreQueryError('QUERY_KEY_INVALID', `store ${spec.name} has ${spec.keySerde.name} keys: give the key as JSON (got ${JSON.stringify(text)})`);
  }
}
