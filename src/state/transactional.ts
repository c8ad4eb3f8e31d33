import type { OutgoingRecord } from '../core/records.ts';
import { mapKey, type KeyValueStore } from './store.ts';
import { endRecordWrites, type UndoEntry } from './undo.ts';
import { checkRecordSize, type RecordSizeLimits } from '../core/record-size.ts';

const NO_HEADERS: readonly [] = [];

/** A buffered value whose decoded form is not known (decoded values may be anything, undefined included). */
const NOT_DECODED: unique symbol = Symbol('not decoded');

interface Pending {
  readonly key: Buffer;
  /** null: deleted in this transaction. */
  readonly value: Buffer | null;
  /** `value` decoded, as written or as last read: a key updated many times per commit is decoded once. */
  decoded: unknown;
  /** Of the last write: the changelog record carries it. */
  readonly timestamp: number;
  /** Already handed to the changelog by flushChangelog; a later write replaces the entry with an unlogged one. */
  logged: boolean;
}

/**
 * One store of one task as the engine sees it. Writes go to a per-transaction buffer (reads see
 * them), and:
 *  - `flushChangelog` emits one changelog record per key written since the last flush, with the last
 *    value (or a tombstone): the changelog commits atomically with the outputs and offsets, so the
 *    intermediate values of a transaction would only be read back by restore to be overwritten,
 *  - `commit` applies the buffer to the committed store,
 *  - `rollback` drops it, so the committed content is exactly what the last commit left,
 *  - `endRecord(false)` undoes only the current record's writes, so a record that goes to the
 *    dead-letter topic leaves no state behind, in the store or in the changelog.
 */
export class TransactionalStore {
  readonly #buffer = new Map<string, Pending>();
  /** Previous buffer entries of keys the current record wrote, newest last. */
  readonly #undo: UndoEntry<Pending>[] = [];

  constructor(
    readonly name: string,
    readonly changelogTopic: string,
    readonly partition: number,
    readonly committed: KeyValueStore,
    /** A write whose changelog record could not be produced fails the record that made it, not the commit. */
    private readonly recordLimits: RecordSizeLimits | number = Number.POSITIVE_INFINITY,
  ) {}

  get(key: Buffer): Buffer | undefined {
    const p = this.#buffer.get(mapKey(key));
    if (p !== undefined) return p.value ?? undefined;
    return this.committed.get(key);
  }

  /**
   * The value of `key`, decoded with `decode`: the object this transaction wrote or decoded before
   * when there is one. Stages must not change what they are handed in place unless they write it back:
   * `fresh` (a retried call, which may have changed it before failing) decodes from the bytes again.
   */
  getDecoded(key: Buffer, decode: (bytes: Buffer) => unknown, fresh: boolean): unknown {
    const p = this.#buffer.get(mapKey(key));
    if (p === undefined) {
      const committed = this.committed.get(key);
      return committed === undefined ? undefined : decode(committed);
    }
    if (p.value === null) return undefined;
    if (fresh || p.decoded === NOT_DECODED) p.decoded = decode(p.value);
    return p.decoded;
  }

  /** `decoded`: what `value` decodes to, kept for the next getDecoded of the key in this transaction. */
  put(key: Buffer, value: Buffer, timestamp: number, decoded: unknown = NOT_DECODED): void {
    this.#write(key, value, timestamp, decoded);
  }

  /** The decoded value of a key (by its mapKey) may be changed by whoever it was handed to: decode the bytes next time. */
  forgetDecoded(storeKey: string): void {
    const p = this.#buffer.get(storeKey);
    if (p !== undefined) p.decoded = NOT_DECODED;
  }

  delete(key: Buffer, timestamp: number): void {
    this.#write(key, null, timestamp, NOT_DECODED);
  }

  #write(key: Buffer, value: Buffer | null, timestamp: number, decoded: unknown): void {
    checkRecordSize(this.changelogTopic, key, value, NO_HEADERS, this.recordLimits);
    const k = mapKey(key);
    this.#undo.push({ k, prev: this.#buffer.get(k) });
    this.#buffer.set(k, { key, value, decoded, timestamp, logged: false });
  }

  /**
   * Emits the changelog record of every key written since the last flush: call it once the
   * transaction's records are processed, before its offsets are sent. Returns how many it emitted.
   */
  flushChangelog(emit: (record: OutgoingRecord) => void): number {
    let n = 0;
    for (const p of this.#buffer.values()) {
      if (p.logged) continue;
      emit({ topic: this.changelogTopic, partition: this.partition, key: p.key, value: p.value, timestamp: p.timestamp });
      p.logged = true;
      n++;
    }
    return n;
  }

  /** Committed entries overlaid with the open transaction's writes. Not on the hot path. */
  *entries(): IterableIterator<readonly [Buffer, Buffer]> {
    for (const [key, value] of this.committed.entries()) {
      if (!this.#buffer.has(mapKey(key))) yield [key, value];
    }
    for (const p of this.#buffer.values()) if (p.value !== null) yield [p.key, p.value];
  }

  endRecord(ok: boolean): void {
    endRecordWrites(this.#buffer, this.#undo, ok);
    // A failed record's stage may have changed a decoded object in place before failing: back to the bytes.
    if (!ok) for (const p of this.#buffer.values()) p.decoded = NOT_DECODED;
  }

  commit(): void {
    for (const p of this.#buffer.values()) {
      if (p.value === null) this.committed.delete(p.key);
      else this.committed.put(p.key, p.value);
    }
    this.#buffer.clear();
    this.#undo.length = 0;
  }

  rollback(): void {
    this.#buffer.clear();
    this.#undo.length = 0;
  }

  get hasUncommittedWrites(): boolean {
    return this.#buffer.size > 0;
  }

  /** Applies one changelog record straight to committed state (restoration happens before processing). */
  /** The open transaction's writes, each key's last (null: deleted): what a copy of committed state applies once it commits. */
  *written(): Iterable<readonly [Buffer, Buffer | null]> {
    for (const p of this.#buffer.values()) yield [p.key, p.value];
  }

  restore(key: Buffer, value: Buffer | null): void {
    if (value === null) this.committed.delete(key);
    else this.committed.put(key, value);
  }
}
