import type { IncomingRecord, RecordOrigin } from '../core/records.ts';
import { endRecordWrites, type UndoEntry } from '../state/undo.ts';

/** An aggregate result held back, with the input record that last changed it (its lineage and headers). */
export interface CachedResult {
  readonly key: unknown;
  readonly value: unknown;
  readonly record: IncomingRecord;
  /** What the result is sent with when released: shared by every result held back for `record`. */
  readonly origin: RecordOrigin;
  readonly timestamp: number;
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

  constructor(readonly maxRecords: number) {}

  get size(): number {
    return this.#entries.size;
  }

  get overflowing(): boolean {
    return this.#entries.size > this.maxRecords;
  }

  put(k: string, result: CachedResult): void {
    const prev = this.#entries.get(k);
    this.#undo.push({ k, prev });
    // Re-inserted, not updated in place: Map order is then least recently updated first.
    if (prev !== undefined) this.#entries.delete(k);
    this.#entries.set(k, result);
  }

  /** Removes and returns the least recently updated result. */
  takeOldest(): CachedResult | undefined {
    for (const [k, r] of this.#entries) {
      this.#entries.delete(k);
      return r;
    }
    return undefined;
  }

  endRecord(ok: boolean): void {
    endRecordWrites(this.#entries, this.#undo, ok);
  }

  /** The transaction aborted: what it held back is dropped with it. */
  clear(): void {
    this.#entries.clear();
    this.#undo.length = 0;
  }
}
