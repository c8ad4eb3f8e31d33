import type { OutgoingRecord } from '../runtime/records.ts';
import { mapKey, type KeyValueStore } from './store.ts';

interface Pending {
  readonly key: Buffer;
  /** null: deleted in this transaction. */
  readonly value: Buffer | null;
}

/**
 * One store of one task as the engine sees it. Writes go to a per-transaction buffer (reads see
 * them), each write emits its changelog record at once, and:
 *  - `commit` applies the buffer to the committed store,
 *  - `rollback` drops it, so the committed content is exactly what the last commit left,
 *  - `endRecord(false)` undoes only the current record's writes, so a record that goes to the
 *    dead-letter topic leaves no state behind (its changelog records are dropped by the task too).
 */
export class TransactionalStore {
  readonly #buffer = new Map<string, Pending>();
  /** Previous buffer entries of keys the current record wrote, newest last. */
  readonly #undo: { readonly k: string; readonly prev: Pending | undefined }[] = [];

  constructor(
    readonly name: string,
    readonly changelogTopic: string,
    readonly partition: number,
    readonly committed: KeyValueStore,
    private readonly emit: (record: OutgoingRecord) => void,
  ) {}

  get(key: Buffer): Buffer | undefined {
    const p = this.#buffer.get(mapKey(key));
    if (p !== undefined) return p.value ?? undefined;
    return this.committed.get(key);
  }

  put(key: Buffer, value: Buffer, timestamp: number): void {
    this.#write(key, value, timestamp);
  }

  delete(key: Buffer, timestamp: number): void {
    this.#write(key, null, timestamp);
  }

  #write(key: Buffer, value: Buffer | null, timestamp: number): void {
    const k = mapKey(key);
    this.#undo.push({ k, prev: this.#buffer.get(k) });
    this.#buffer.set(k, { key, value });
    this.emit({ topic: this.changelogTopic, partition: this.partition, key, value, timestamp });
  }

  /** Committed entries overlaid with the open transaction's writes. Not on the hot path. */
  *entries(): IterableIterator<readonly [Buffer, Buffer]> {
    for (const [key, value] of this.committed.entries()) {
      if (!this.#buffer.has(mapKey(key))) yield [key, value];
    }
    for (const p of this.#buffer.values()) if (p.value !== null) yield [p.key, p.value];
  }

  endRecord(ok: boolean): void {
    const u = this.#undo;
    if (u.length === 0) return;
    if (!ok) {
      for (let i = u.length - 1; i >= 0; i--) {
        const { k, prev } = u[i]!;
        if (prev === undefined) this.#buffer.delete(k);
        else this.#buffer.set(k, prev);
      }
    }
    u.length = 0;
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
  restore(key: Buffer, value: Buffer | null): void {
    if (value === null) this.committed.delete(key);
    else this.committed.put(key, value);
  }
}
