// The stages that read and write a store (dedupe, latest-by-version, aggregates, windows): their
// writes go through the task's transactional stores, so a rollback undoes them.
import type { SerdeContext } from '../../serdes/serde.ts';
import type { WindowSpec, Windowed } from '../../dsl/types.ts';
import type { CompiledNode, CompiledStore } from '../../graph/types.ts';
import type { TransactionalStore } from '../../state/transactional.ts';
import { DeadlineHeap } from '../../state/heap.ts';
import { mapKey } from '../../state/store.ts';
import { CACHE_ENTRY_OVERHEAD_BYTES, RecordCache, type CachedResult } from './record-cache.ts';
import { splitWindowStoreKey, windowStartsFor, windowStoreKey } from '../../state/windowed.ts';
import { StageFailure } from './node-errors.ts';
import { TaskState } from './task-state.ts';
import type { NodeFactories } from './node-factory.ts';
import { errorCode } from '../../core/stage-errors.ts';
import { RuntimeNode, type Spec } from './runtime-node.ts';
import type { Step } from './step.ts';

export abstract class StatefulNode extends RuntimeNode {
  readonly store: TransactionalStore;
  readonly storeSpec: CompiledStore;
  readonly keyCtx: SerdeContext;
  readonly valueCtx: SerdeContext;

  constructor(task: TaskState, node: CompiledNode, store: TransactionalStore, storeSpec: CompiledStore) {
    super(task, node);
    this.store = store;
    this.storeSpec = storeSpec;
    this.keyCtx = { topic: storeSpec.changelogTopic, role: 'key' };
    this.valueCtx = { topic: storeSpec.changelogTopic, role: 'value' };
  }

  #indexed = false;

  override reset(): void {
    this.#indexed = false;
  }

  /** Builds the node's in-memory index of its store (rebuildIndex) on first use after a reset: a rollback or a failed record. */
  protected ensureIndexed(): void {
    if (this.#indexed) return;
    this.rebuildIndex();
    this.#indexed = true;
  }

  protected rebuildIndex(): void {}

  /** A null key has no state to go to: the record is dropped and counted, as Kafka Streams does. */
  protected dropsNullKey(key: unknown): boolean {
    if (key !== null && key !== undefined) return false;
    this.task.metrics.nullKeysDropped++;
    return true;
  }

  protected keyBytes(key: unknown): Buffer {
    return this.storeSpec.keySerde.serialize(key, this.keyCtx) ?? Buffer.alloc(0);
  }

  /**
   * Windows whose close time stream time has reached leave the store (late records can no longer change
   * them); with `emitFinal` they are emitted now. Heap entries of windows no longer stored are skipped.
   */
  protected closeDue(index: () => void, due: DeadlineHeap<Buffer>, emitFinal: boolean, windowOf: (storeKey: Buffer) => Windowed<unknown>, closed: (storeKey: Buffer) => void): Step {
    let pairs: [Windowed<unknown>, unknown][] | undefined;
    try {
      index();
      const now = this.task.streamTime;
      for (let e = due.popDue(now); e !== undefined; e = due.popDue(now)) {
        const stored = this.store.get(e.item);
        if (stored === undefined) continue;
        if (emitFinal) (pairs ??= []).push([windowOf(e.item), this.storeSpec.valueSerde.deserialize(stored, this.valueCtx)]);
        this.store.delete(e.item, now);
        closed(e.item);
      }
    } catch (e) {
      throw new StageFailure(this.name, e, 1, errorCode(e, 'WINDOW_CLOSE_FAILED'));
    }
    return pairs === undefined ? undefined : this.forwardPairs(pairs, 0);
  }
}

/** A record for windows that closed at `closedAt` (stream time): counted, reported, maybe dead-lettered. */
export function dropLateRecord(node: StatefulNode, closedAt: number, handling: 'drop' | 'dead-letter'): void {
  const task = node.task;
  const now = task.streamTime;
  task.metrics.lateRecordsDropped++;
  task.env.onLateRecord?.({ stage: node.name, store: node.storeSpec.name, lateByMs: now - closedAt, record: task.current });
  if (handling === 'dead-letter') task.routeToDeadLetter('LATE_RECORD', `record at ${task.timestamp} is later than the grace period of every window it belongs to (stream time ${now})`, node.name);
}

export class DedupeNode extends StatefulNode {
  readonly #spec = this.node.spec as Spec<'dedupe'>;
  readonly #heap = new DeadlineHeap<Buffer>();
  #indexed = false;

  override reset(): void {
    this.#indexed = false;
  }

  #firstSeen(bytes: Buffer): number {
    return Number(bytes.toString('utf8'));
  }

  #expire(): void {
    const ttl = this.#spec.ttlMs;
    const now = this.task.streamTime;
    if (!this.#indexed) {
      this.#heap.clear();
      for (const [k, v] of this.store.entries()) this.#heap.push(this.#firstSeen(v) + ttl, k);
      this.#indexed = true;
    }
    for (let e = this.#heap.popDue(now); e !== undefined; e = this.#heap.popDue(now)) {
      const stored = this.store.get(e.item);
      // the id may have been seen again (re-put) since this deadline was queued
      if (stored !== undefined && this.#firstSeen(stored) + ttl <= now) this.store.delete(e.item, now);
    }
  }

  protected apply(key: unknown, value: unknown): Step {
    const id = String(this.checkSync(this.#spec.fn(key, value)));
    this.#expire();
    const now = this.task.streamTime;
    const kb = Buffer.from(id, 'utf8');
    const seen = this.store.get(kb);
    if (seen !== undefined && this.#firstSeen(seen) + this.#spec.ttlMs > now) {
      this.task.metrics.duplicatesDropped++;
      return;
    }
    this.store.put(kb, Buffer.from(String(now), 'utf8'), now);
    this.#heap.push(now + this.#spec.ttlMs, kb);
    return this.forward(key, value);
  }
}

export class LatestByVersionNode extends StatefulNode {
  readonly #fn = (this.node.spec as Spec<'latestByVersion'>).fn;
  protected apply(key: unknown, value: unknown): Step {
    if (key === null || key === undefined) {
      this.task.metrics.nullKeysDropped++;
      return;
    }
    const version = Number(this.checkSync(this.#fn(key, value)));
    const kb = this.keyBytes(key);
    const stored = this.store.get(kb);
    if (stored !== undefined && !(version > (this.storeSpec.valueSerde.deserialize(stored, this.valueCtx) as number))) {
      this.task.metrics.staleVersionsDropped++;
      return;
    }
    this.store.put(kb, this.storeSpec.valueSerde.serialize(version, this.valueCtx)!, this.task.timestamp);
    return this.forward(key, value);
  }
}

/** What an aggregate node applies to its store: the stage's own, or one input's of a cogroup. */
export interface Aggregation {
  readonly init: () => unknown;
  readonly fn: (key: unknown, value: unknown, agg: unknown) => unknown;
}

export class AggregateNode extends StatefulNode {
  readonly #spec: Aggregation;
  readonly cache: RecordCache | undefined;

  /** `cache`: one shared with the other inputs of a cogroup, so that a key's latest update is the one released. */
  constructor(task: TaskState, node: CompiledNode, store: TransactionalStore, storeSpec: CompiledStore, aggregation: Aggregation = node.spec as Spec<'aggregate'>, cache?: RecordCache) {
    super(task, node, store, storeSpec);
    this.#spec = aggregation;
    this.cache = cache ?? (task.env.cache && new RecordCache(task.env.cache.budget, task.env.cache.maxRecords));
  }

  readonly #decode = (bytes: Buffer): unknown => this.storeSpec.valueSerde.deserialize(bytes, this.valueCtx);

  /** Sends a held-back result downstream; the task has made its input record the current one. */
  release(result: CachedResult): Step {
    // Stages downstream may change the object they are handed: the next update of the key decodes its bytes again.
    this.store.forgetDecoded(result.storeKey);
    return this.forward(result.key, result.value);
  }

  protected apply(key: unknown, value: unknown, attempt: number): Step {
    if (key === null || key === undefined) {
      this.task.metrics.nullKeysDropped++;
      return;
    }
    const kb = this.keyBytes(key);
    if (this.cache === undefined) {
      const stored = this.store.get(kb);
      const next = this.checkSync(this.#spec.fn(key, value, stored === undefined ? this.#spec.init() : this.#decode(stored)));
      this.#write(kb, next, undefined);
      return this.forward(key, next);
    }
    const storeKey = mapKey(kb);
    try {
      // The aggregate as this transaction last wrote it, not decoded again: a hot key is decoded once per commit.
      const stored = this.store.getDecoded(kb, this.#decode, attempt > 1);
      const next = this.checkSync(this.#spec.fn(key, value, stored === undefined ? this.#spec.init() : stored));
      const bytes = this.#write(kb, next, next);
      const cost = kb.length + (bytes?.length ?? 0) + CACHE_ENTRY_OVERHEAD_BYTES;
      this.cache.put(storeKey, { key, storeKey, value: next, record: this.task.current, origin: this.task.releasedOrigin(), timestamp: this.task.timestamp, bytes: cost });
    } catch (e) {
      // The aggregator may have changed the held-back object in place before the record failed: back to the stored bytes.
      const bytes = this.store.get(kb);
      if (bytes !== undefined) this.cache.replaceValue(storeKey, this.#decode(bytes));
      throw e;
    }
  }

  /** Writes the aggregate's new value (a null encoding deletes it); `decoded` is kept for the next read of the key. */
  #write(kb: Buffer, next: unknown, decoded: unknown): Buffer | null {
    const bytes = this.storeSpec.valueSerde.serialize(next, this.valueCtx);
    if (bytes === null) this.store.delete(kb, this.task.timestamp);
    else if (decoded === undefined) this.store.put(kb, bytes, this.task.timestamp);
    else this.store.put(kb, bytes, this.task.timestamp, decoded);
    return bytes;
  }
}

export class WindowedAggregateNode extends StatefulNode {
  readonly #spec: Aggregation;
  readonly #w: WindowSpec = this.storeSpec.window!;
  readonly #heap = new DeadlineHeap<Buffer>();
  readonly #starts: number[] = [];
  #indexed = false;

  constructor(task: TaskState, node: CompiledNode, store: TransactionalStore, storeSpec: CompiledStore, aggregation: Aggregation = node.spec as Spec<'aggregate'>) {
    super(task, node, store, storeSpec);
    this.#spec = aggregation;
  }

  override reset(): void {
    this.#indexed = false;
  }

  #index(): void {
    if (this.#indexed) return;
    this.#heap.clear();
    for (const [k] of this.store.entries()) this.#heap.push(splitWindowStoreKey(k).start + this.#w.sizeMs + this.#w.graceMs, k);
    this.#indexed = true;
  }

  protected apply(key: unknown, value: unknown): Step {
    if (key === null || key === undefined) {
      this.task.metrics.nullKeysDropped++;
      return;
    }
    this.#index();
    const { sizeMs, graceMs, advanceMs } = this.#w;
    const starts = windowStartsFor(this.task.timestamp, sizeMs, advanceMs, this.#starts);
    const serde = this.storeSpec.valueSerde;
    const kb = this.keyBytes(key);
    const now = this.task.streamTime;
    // compute every window first, so a throwing aggregator leaves nothing half-written for the retry
    const updates: { sk: Buffer; start: number; fresh: boolean; next: unknown }[] = [];
    for (const start of starts) {
      if (start + sizeMs + graceMs <= now) continue;
      const sk = windowStoreKey(kb, start);
      const stored = this.store.get(sk);
      const agg = stored === undefined ? this.#spec.init() : serde.deserialize(stored, this.valueCtx);
      updates.push({ sk, start, fresh: stored === undefined, next: this.checkSync(this.#spec.fn(key, value, agg)) });
    }
    if (updates.length === 0) {
      // how far behind the end of the grace period of the last window this record belongs to
      const lastStart = starts.length > 0 ? Math.max(...starts) : this.task.timestamp;
      dropLateRecord(this, lastStart + sizeMs + graceMs, this.#w.lateRecords);
      return;
    }
    const pairs: [Windowed<unknown>, unknown][] = [];
    for (const u of updates) {
      const bytes = serde.serialize(u.next, this.valueCtx);
      if (bytes === null) this.store.delete(u.sk, this.task.timestamp);
      else this.store.put(u.sk, bytes, this.task.timestamp);
      if (u.fresh) this.#heap.push(u.start + sizeMs + graceMs, u.sk);
      if (!this.#w.emitFinal) pairs.push([{ key, start: u.start, end: u.start + sizeMs }, u.next]);
    }
    return pairs.length === 0 ? undefined : this.forwardPairs(pairs, 0);
  }

  /** Closed windows leave the store (late records can no longer change them); with emitFinal they are emitted now. */
  override fireStreamTime(): Step {
    return this.closeDue(
      () => this.#index(),
      this.#heap,
      this.#w.emitFinal,
      (storeKey) => {
        const { inner, start } = splitWindowStoreKey(storeKey);
        return { key: this.storeSpec.keySerde.deserialize(inner, this.keyCtx), start, end: start + this.#w.sizeMs };
      },
      () => undefined,
    );
  }
}


export const DEDUPE_AND_VERSION_NODES = {
  dedupe: ({ task, node, storeOf }) => {
    const s = storeOf(node.stores[0]!);
    return new DedupeNode(task, node, s.store, s.spec);
  },
  latestByVersion: ({ task, node, storeOf }) => {
    const s = storeOf(node.stores[0]!);
    return new LatestByVersionNode(task, node, s.store, s.spec);
  },
} satisfies NodeFactories;
