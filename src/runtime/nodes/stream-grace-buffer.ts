// The grace period of a stream-table join (Kafka Streams' KIP-923): stream records wait in a store,
// changelogged in the transaction like every store, until stream time passes their timestamp + grace;
// then they join a versioned table as of their timestamp, in timestamp order. A table update that
// arrives a little after a stream record it should have met is then in the history when that record
// joins. The store's layout is a stream-stream join window's (state/join-window.ts): one entry per
// record, the same on every replay of it.
import { recordPosition } from '../../core/record-batch.ts';
import type { CompiledStore } from '../../graph/types.ts';
import type { SerdeContext } from '../../serdes/serde.ts';
import { DeadlineHeap } from '../../state/heap.ts';
import { joinRecordKey, joinRecordValue, splitJoinRecordKey, splitJoinRecordValue } from '../../state/join-window.ts';
import type { TransactionalStore } from '../../state/transactional.ts';
import type { TaskState } from './task-state.ts';

/** A stream record the buffer let go: it joins now, with its own timestamp. */
export interface ReleasedRecord {
  readonly key: unknown;
  readonly value: unknown;
  readonly timestamp: number;
}

const SUFFIX_BYTES = 20;

export class StreamGraceBuffer {
  readonly #due = new DeadlineHeap<Buffer>();
  readonly #keyCtx: SerdeContext;
  readonly #valueCtx: SerdeContext;
  #indexed = false;
  #seq = -1;
  #fanout = 0;

  constructor(
    readonly store: TransactionalStore,
    readonly spec: CompiledStore,
    readonly task: TaskState,
    readonly graceMs: number,
  ) {
    this.#keyCtx = { topic: spec.changelogTopic, role: 'key' };
    this.#valueCtx = { topic: spec.changelogTopic, role: 'value' };
  }

  /** After a restore or a rollback: the heap is rebuilt from the store. */
  reset(): void {
    this.#indexed = false;
  }

  #index(): void {
    if (this.#indexed) return;
    this.#due.clear();
    for (const [storeKey] of this.store.entries()) this.#due.push(splitJoinRecordKey(storeKey).timestamp + this.graceMs, storeKey);
    this.#indexed = true;
  }

  /** Whether a record of `timestamp` is already past its grace, so it joins at once, as Kafka Streams lets a late record through. */
  isDue(timestamp: number): boolean {
    return timestamp + this.graceMs <= this.task.streamTime;
  }

  /** Keeps the current record until it is due. */
  hold(key: unknown, value: unknown): void {
    this.#index();
    // A record an upstream flatMap fanned out into several with one key: each its own entry.
    if (this.#seq === this.task.seq) this.#fanout++;
    else {
      this.#seq = this.task.seq;
      this.#fanout = 0;
    }
    const timestamp = this.task.timestamp;
    const keyBytes = this.spec.keySerde.serialize(key, this.#keyCtx) ?? Buffer.alloc(0);
    const valueBytes = value === null || value === undefined ? null : this.spec.valueSerde.serialize(value, this.#valueCtx);
    const storeKey = joinRecordKey(keyBytes, timestamp, recordPosition(this.task.current), this.#fanout);
    this.store.put(storeKey, joinRecordValue(false, valueBytes), timestamp);
    this.#due.push(timestamp + this.graceMs, storeKey);
  }

  /** The records stream time has let go, taken out of the store, oldest first (ties in arrival order, the same after a restore). */
  release(): ReleasedRecord[] {
    this.#index();
    const due: Buffer[] = [];
    const now = this.task.streamTime;
    for (let e = this.#due.popDue(now); e !== undefined; e = this.#due.popDue(now)) if (this.store.get(e.item) !== undefined) due.push(e.item);
    due.sort((a, b) => Buffer.compare(a.subarray(a.length - SUFFIX_BYTES), b.subarray(b.length - SUFFIX_BYTES)));
    return due.map((storeKey) => {
      const { inner, timestamp } = splitJoinRecordKey(storeKey);
      const { value } = splitJoinRecordValue(this.store.get(storeKey)!);
      this.store.delete(storeKey, now);
      return { key: this.spec.keySerde.deserialize(inner, this.#keyCtx), value: value === null ? null : this.spec.valueSerde.deserialize(value, this.#valueCtx), timestamp };
    });
  }
}
