import type { IncomingRecord, RecordOrigin } from '../../core/records.ts';
import { endRecordWrites, type UndoEntry } from '../../state/undo.ts';

/** An aggregate result held back, with the input record that last changed it (its lineage and headers). */
export interface CachedResult {
  readonly key: unknown;
  /** The key as the store and this cache know it (state/store.ts mapKey of its bytes). */
  readonly storeKey: string;
  readonly value: unknown;
  readonly record: IncomingRecord;
  /** What the result is sent with when released: shared by every result held back for `record`. */
  readonly origin: RecordOrigin;
  readonly timestamp: number;
  /** What the entry is counted as against the budget: its key and value bytes and a fixed overhead. */
  readonly bytes: number;
}

/** What an entry costs beyond its key and value bytes (the result object, the map entry): an estimate, as Kafka Streams' is. */
export const CACHE_ENTRY_OVERHEAD_BYTES = 120;

/**
 * The bytes every record cache of one worker may hold together (Kafka Streams' `statestore.cache.max.bytes`,
 * 10 MiB by default there too). Shared, so a worker with many tasks does not hold many times the limit.
 */
export class CacheBudget {
  used = 0;
  constructor(readonly maxBytes: number) {}

  get exceeded(): boolean {
    return this.used > this.maxBytes;
  }
}

/**
 * The latest result per key of one aggregate in one task, held back until the transaction commits
 * (Kafka Streams' record cache). Least recently updated first, so an overflow releases the key least
 * likely to change again. Like TransactionalStore, it undoes a failed record's updates: a
 * dead-lettered record must not release a result the store never kept.
 */
export class RecordCache {
  readonly #entries = new Map<string, CachedResult>();
  readonly #undo: UndoEntry<CachedResult>[] = [];

  /** `maxRecords`: keys this cache holds at most, besides the worker's byte budget. */
  constructor(
    readonly budget: CacheBudget,
    readonly maxRecords: number = Number.POSITIVE_INFINITY,
  ) {}

  get size(): number {
    return this.#entries.size;
  }

  get overflowing(): boolean {
    return this.#entries.size > 0 && (this.#entries.size > this.maxRecords || this.budget.exceeded);
  }

  put(k: string, result: CachedResult): void {
    const prev = this.#entries.get(k);
    this.#undo.push({ k, prev });
    this.budget.used += result.bytes - (prev?.bytes ?? 0);
    // Re-inserted, not updated in place: Map order is then least recently updated first.
    if (prev !== undefined) this.#entries.delete(k);
    this.#entries.set(k, result);
  }

  /** Replaces the value held for `k`, in place and for good (no undo): it was changed where it should not have been. */
  replaceValue(k: string, value: unknown): void {
    const held = this.#entries.get(k);
    if (held !== undefined) this.#entries.set(k, { ...held, value });
  }

  /** Removes and returns the least recently updated result. */
  takeOldest(): CachedResult | undefined {
    for (const [k, r] of this.#entries) {
      this.#entries.delete(k);
      this.budget.used -= r.bytes;
      return r;
    }
    return undefined;
  }

  endRecord(ok: boolean): void {
    if (!ok) {
      // Counted newest first, before each entry is put back: what the failed record's puts added goes with them.
      for (let i = this.#undo.length - 1; i >= 0; i--) {
        const { k, prev } = this.#undo[i]!;
        this.budget.used += (prev?.bytes ?? 0) - (this.#entries.get(k)?.bytes ?? 0);
        endRecordWrites(this.#entries, [this.#undo[i]!], false);
      }
    }
    this.#undo.length = 0;
  }

  /** The transaction aborted: what it held back is dropped with it. */
  clear(): void {
    for (const r of this.#entries.values()) this.budget.used -= r.bytes;
    this.#entries.clear();
    this.#undo.length = 0;
  }
}
