// Joins of two tables and of two streams inside a task (stream-table joins: stream-table-joins.ts).
// Tables are read through their RowReader; a stream-stream join keeps each side's records in a
// changelogged window store, so its state commits, rolls back and restores with the transaction like
// an aggregate's.
import { recordPosition } from '../../core/record-batch.ts';
import type { CompiledNode, CompiledStore } from '../../graph/types.ts';
import type { SerdeContext } from '../../serdes/serde.ts';
import type { TransactionalStore } from '../../state/transactional.ts';
import { DeadlineHeap } from '../../state/heap.ts';
import { mapKey } from '../../state/store.ts';
import { joinRecordKey, joinRecordValue, splitJoinRecordKey, splitJoinRecordValue } from '../../state/join-window.ts';
import { StageFailure } from './node-errors.ts';
import { type TaskState } from './task-state.ts';
import type { NodeFactories, RowReader } from './node-factory.ts';
import { errorCode } from '../../core/stage-errors.ts';
import type { Spec } from './runtime-node.ts';
import type { Step } from './step.ts';
import { JoinNode } from './join-node.ts';

/** A table of the joined rows: an update on either side emits the key's new joined row (or its deletion). */
export class TableTableJoinNode extends JoinNode implements RowReader {
  readonly #mode = (this.node.spec as Spec<'tableTableJoin'>).mode;

  constructor(
    task: TaskState,
    node: CompiledNode,
    readonly left: RowReader,
    readonly right: RowReader,
  ) {
    super(task, node, [(key, value) => this.#onUpdate(key, value ?? undefined, right.row(key)), (key, value) => this.#onUpdate(key, left.row(key), value ?? undefined)]);
  }

  #joined(key: unknown, left: unknown, right: unknown): unknown {
    const hasLeft = left !== undefined;
    const hasRight = right !== undefined;
    const emits = this.#mode === 'inner' ? hasLeft && hasRight : this.#mode === 'left' ? hasLeft : hasLeft || hasRight;
    return emits ? this.join(key, left ?? null, right ?? null) : undefined;
  }

  #onUpdate(key: unknown, left: unknown, right: unknown): Step {
    if (key === null || key === undefined) {
      this.task.metrics.nullKeysDropped++;
      return;
    }
    return this.forward(key, this.#joined(key, left, right) ?? null);
  }

  row(key: unknown): unknown {
    const joined = this.#joined(key, this.left.row(key), this.right.row(key));
    return joined === null ? undefined : joined;
  }
}

interface StoredRecord {
  readonly storeKey: Buffer;
  readonly timestamp: number;
}

/** One side of a stream-stream join: its window store and an in-memory index of it by key. */
class JoinSide {
  readonly keyCtx: SerdeContext;
  readonly valueCtx: SerdeContext;
  readonly byKey = new Map<string, StoredRecord[]>();

  constructor(
    readonly store: TransactionalStore,
    readonly spec: CompiledStore,
    /** How far after / before this side's record the other side's records match. */
    readonly afterMs: number,
    readonly beforeMs: number,
  ) {
    this.keyCtx = { topic: spec.changelogTopic, role: 'key' };
    this.valueCtx = { topic: spec.changelogTopic, role: 'value' };
  }

  index(storeKey: Buffer): StoredRecord {
    const { inner, timestamp } = splitJoinRecordKey(storeKey);
    const record = { storeKey, timestamp };
    const k = mapKey(inner);
    (this.byKey.get(k) ?? this.byKey.set(k, []).get(k)!).push(record);
    return record;
  }

  unindex(storeKey: Buffer): void {
    const k = mapKey(splitJoinRecordKey(storeKey).inner);
    const list = this.byKey.get(k);
    if (!list) return;
    const i = list.findIndex((r) => r.storeKey.equals(storeKey));
    if (i >= 0) list.splice(i, 1);
    if (list.length === 0) this.byKey.delete(k);
  }

  decode(bytes: Buffer | null): unknown {
    return bytes === null ? null : this.spec.valueSerde.deserialize(bytes, this.valueCtx);
  }
}

/**
 * Records of the two streams join when their timestamps are within the join window. Each record
 * stays in its side's store until no record of the other side can match it any more (stream time
 * past its timestamp + the window's reach + grace); then it leaves, and a left/outer join emits it
 * with null if it never matched, so there are no early unmatched results.
 */
export class StreamStreamJoinNode extends JoinNode {
  readonly #spec = this.node.spec as Spec<'streamStreamJoin'>;
  readonly #sides: readonly [JoinSide, JoinSide];
  readonly #deadlines = new DeadlineHeap<{ side: 0 | 1; storeKey: Buffer }>();
  #indexed = false;
  #seq = -1;
  #fanout = 0;

  constructor(task: TaskState, node: CompiledNode, stores: readonly [{ store: TransactionalStore; spec: CompiledStore }, { store: TransactionalStore; spec: CompiledStore }]) {
    super(task, node, [(key, value) => this.#onRecord(0, key, value), (key, value) => this.#onRecord(1, key, value)]);
    const { afterMs, beforeMs } = (node.spec as Spec<'streamStreamJoin'>).window;
    this.#sides = [new JoinSide(stores[0].store, stores[0].spec, afterMs, beforeMs), new JoinSide(stores[1].store, stores[1].spec, beforeMs, afterMs)];
  }

  override reset(): void {
    this.#indexed = false;
  }

  #closesAt(side: 0 | 1, timestamp: number): number {
    return timestamp + this.#sides[side].afterMs + this.#spec.window.graceMs + 1;
  }

  #index(): void {
    if (this.#indexed) return;
    this.#deadlines.clear();
    for (const [i, side] of this.#sides.entries()) {
      side.byKey.clear();
      for (const [storeKey] of side.store.entries()) {
        const r = side.index(storeKey);
        this.#deadlines.push(this.#closesAt(i as 0 | 1, r.timestamp), { side: i as 0 | 1, storeKey });
      }
    }
    this.#indexed = true;
  }

  /** Unmatched results are emitted by a left join for its left side, by an outer join for both. */
  #emitsUnmatched(side: 0 | 1): boolean {
    return this.#spec.mode === 'outer' || (this.#spec.mode === 'left' && side === 0);
  }

  #onRecord(sideIndex: 0 | 1, key: unknown, value: unknown): Step {
    if (key === null || key === undefined) {
      this.task.metrics.nullKeysDropped++;
      return;
    }
    this.#index();
    const ts = this.task.timestamp;
    if (ts + this.#spec.window.graceMs < this.task.streamTime) {
      this.task.metrics.lateRecordsDropped++;
      return;
    }
    if (this.#seq === this.task.seq) this.#fanout++;
    else {
      this.#seq = this.task.seq;
      this.#fanout = 0;
    }
    const side = this.#sides[sideIndex];
    const other = this.#sides[sideIndex === 0 ? 1 : 0];
    const kb = side.spec.keySerde.serialize(key, side.keyCtx) ?? Buffer.alloc(0);
    const candidates = (other.byKey.get(mapKey(kb)) ?? []).filter((r) => r.timestamp >= ts - side.beforeMs && r.timestamp <= ts + side.afterMs).sort((a, b) => a.timestamp - b.timestamp);
    const results: { key: unknown; value: unknown; timestamp: number }[] = [];
    const marks: [Buffer, Buffer][] = [];
    for (const r of candidates) {
      const stored = splitJoinRecordValue(other.store.get(r.storeKey)!);
      const otherValue = other.decode(stored.value);
      // As Kafka Streams stamps a joined pair: the later of the two, whichever side came second.
      results.push({ key, value: sideIndex === 0 ? this.join(key, value, otherValue) : this.join(key, otherValue, value), timestamp: Math.max(ts, r.timestamp) });
      if (!stored.matched && this.#emitsUnmatched(sideIndex === 0 ? 1 : 0)) marks.push([r.storeKey, joinRecordValue(true, stored.value)]);
    }
    // every joiner call first: a throwing joiner leaves no store write behind for the retry
    const valueBytes = value === null || value === undefined ? null : side.spec.valueSerde.serialize(value, side.valueCtx);
    const storeKey = joinRecordKey(kb, ts, recordPosition(this.task.current), this.#fanout);
    side.store.put(storeKey, joinRecordValue(candidates.length > 0, valueBytes), ts);
    side.index(storeKey);
    this.#deadlines.push(this.#closesAt(sideIndex, ts), { side: sideIndex, storeKey });
    for (const [k, v] of marks) other.store.put(k, v, ts);
    return this.emitEach(results, 0);
  }

  /** Records no later record can match leave their stores; unmatched ones of a left/outer side are emitted with null. */
  override fireStreamTime(): Step {
    const unmatched: { key: unknown; value: unknown; timestamp: number }[] = [];
    try {
      this.#index();
      const now = this.task.streamTime;
      for (let e = this.#deadlines.popDue(now); e !== undefined; e = this.#deadlines.popDue(now)) {
        const { side: sideIndex, storeKey } = e.item;
        const side = this.#sides[sideIndex];
        const bytes = side.store.get(storeKey);
        if (bytes === undefined) continue;
        const stored = splitJoinRecordValue(bytes);
        const { inner, timestamp } = splitJoinRecordKey(storeKey);
        if (!stored.matched && this.#emitsUnmatched(sideIndex)) {
          const key = side.spec.keySerde.deserialize(inner, side.keyCtx);
          const value = side.decode(stored.value);
          unmatched.push({ key, value: sideIndex === 0 ? this.join(key, value, null) : this.join(key, null, value), timestamp });
        }
        side.store.delete(storeKey, now);
        side.unindex(storeKey);
      }
    } catch (e) {
      throw new StageFailure(this.name, e, 1, errorCode(e, 'JOIN_WINDOW_CLOSE_FAILED'));
    }
    return this.emitEach(unmatched, 0);
  }
}

export const JOIN_NODES = {
  tableTableJoin: ({ task, node, tableInput }) => new TableTableJoinNode(task, node, tableInput(0), tableInput(1)),
  streamStreamJoin: ({ task, node, storeOf }) => {
    const n = new StreamStreamJoinNode(task, node, [storeOf(node.stores[0]!), storeOf(node.stores[1]!)]);
    task.timeListeners.push(n);
    return n;
  },
} satisfies NodeFactories;
