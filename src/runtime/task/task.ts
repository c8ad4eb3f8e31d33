import type { CompiledSubtopology, TaskPlan } from '../../graph/types.ts';
import type { CommitCollector, IncomingRecord, RecordCollector } from '../../core/records.ts';
import { inMemoryStoreFactory } from '../../state/store.ts';
import { TaskStores, type ChangelogPartition } from './task-stores.ts';
import { StoreReader } from '../../state/queries.ts';
import { createRuntimeNode } from '../nodes/registry.ts';
import type { SourceNode } from '../nodes/stateless.ts';
import { TaskState, type CachingNode, type TaskMetrics } from '../nodes/task-state.ts';
import type { CachedResult } from '../nodes/record-cache.ts';
import type { PunctuatingNode } from '../nodes/task-state.ts';
import { taskEnvironment, type TaskOptions } from './task-options.ts';
import { TaskBusyError, UnknownSourceTopicError, UnknownSubtopologyError } from './task-errors.ts';
import type { RuntimeNode } from '../nodes/runtime-node.ts';
import type { Step } from '../nodes/step.ts';
import { StageFailure } from '../nodes/node-errors.ts';
import { checkTableSourceRecord, type RestoreRejection } from './table-source-restore.ts';

/** A task's id: its sub-topology and the partition of its sources it reads (state directories are named after it). */
export const taskId = (subtopology: number, partition: number): string => `${subtopology}_${partition}`;

/**
 * One task: a sub-topology applied to one partition of its input topics. The worker and the test
 * driver both run this class. Not re-entrant: when `process` returns a promise, await it first.
 */
export class Task {
  /** `<subtopology>_<partition>`, as Kafka Streams names tasks. */
  readonly id: string;
  readonly subtopology: number;
  readonly partition: number;
  readonly inputTopics: readonly string[];
  readonly #state: TaskState;
  readonly #sources = new Map<string, SourceNode>();
  readonly #stores: TaskStores;
  readonly #stateful: RuntimeNode[] = [];
  readonly #caching: readonly CachingNode[];
  readonly #punctuating: readonly PunctuatingNode[];
  #committedStreamTime: number;

  constructor(plan: TaskPlan, sub: CompiledSubtopology, partition: number, opts: TaskOptions = {}) {
    this.id = taskId(sub.id, partition);
    this.subtopology = sub.id;
    this.partition = partition;
    this.inputTopics = sub.sourceTopics;
    this.#state = new TaskState(partition, taskEnvironment(plan, opts));
    if (opts.initialStreamTime !== undefined) this.#state.streamTime = opts.initialStreamTime;
    this.#committedStreamTime = this.#state.streamTime;

    this.#stores = new TaskStores(this.id, plan, sub, partition, opts.storeFactory ?? inMemoryStoreFactory, this.#state.env.recordLimits);

    const rt = new Map<string, RuntimeNode>();
    for (const n of sub.nodes) {
      const node = createRuntimeNode(this.#state, n, (s) => this.#stores.of(s), (name) => rt.get(name)!);
      rt.set(n.name, node);
      if (n.kind === 'source' || n.kind === 'repartitionSource') this.#sources.set(n.topic!, node as SourceNode);
      if (n.stores.length > 0) this.#stateful.push(node);
    }
    for (const n of sub.nodes) rt.get(n.name)!.children = n.children.map((c, i) => rt.get(c)!.inputFrom(n.name, n.children.slice(0, i).filter((earlier) => earlier === c).length));
    this.#caching = this.#state.caching;
    this.#punctuating = this.#state.punctuating;
  }

  /** No store, record cache or punctuation: nothing a rollback must undo (worker-topology.ts). */
  get stateless(): boolean {
    return this.#stores.empty && this.#caching.length === 0 && this.#punctuating.length === 0 && this.#stateful.length === 0 && this.#state.timeListeners.length === 0;
  }

  /** Whether a processor stage of this task has a punctuation on wall-clock time. */
  get punctuatesOnWallClock(): boolean {
    return this.#punctuating.some((n) => n.punctuatesOnWallClock);
  }

  /** Whether a wall-clock punctuation is due at `now` (the worker opens a transaction for it only then). */
  wallClockDue(now: number): boolean {
    return this.#punctuating.some((n) => n.wallClockDue(now));
  }

  /**
   * Runs the wall-clock punctuations due at `now`, in the open transaction. Their outputs stand for a
   * record of their own (topic `<task>-wall-clock`, offset `now`); a punctuation that throws sends
   * that record to the dead-letter topic, its writes undone.
   */
  punctuateWallClock(now: number, collector: RecordCollector): Step {
    const state = this.#state;
    if (state.busy) throw new TaskBusyError(this.id);
    if (!this.wallClockDue(now)) return;
    state.begin({ topic: `${this.id}-wall-clock`, partition: this.partition, offset: now, key: null, value: null, timestamp: now, headers: [] });
    state.seq++;
    const run = (from: number): Step => {
      for (let i = from; i < this.#punctuating.length; i++) {
        const r = this.#punctuating[i]!.punctuateWallClock(now);
        if (r !== undefined) return r.then(() => run(i + 1));
      }
    };
    return this.#runWithoutInput(() => run(0), collector, (e) => this.#fail(e, collector, undefined, false));
  }

  /** A run with no input record behind it (stream time moved, a punctuation): its outputs go on success, `failed` handles an error. */
  #runWithoutInput(run: () => Step, collector: RecordCollector, failed: (e: unknown) => void): Step {
    const state = this.#state;
    let r: Step;
    try {
      r = run();
    } catch (e) {
      return failed(e);
    }
    if (r === undefined) return this.#release(collector, undefined);
    state.busy = true;
    return r.then(
      () => {
        state.busy = false;
        this.#release(collector, undefined);
      },
      (e: unknown) => {
        state.busy = false;
        failed(e);
      },
    );
  }

  get joinMisses(): ReadonlyMap<string, number> {
    return this.#state.joinMisses;
  }

  get metrics(): Readonly<TaskMetrics> {
    return this.#state.metrics;
  }

  /** The largest event time seen (never moves back); -Infinity before the first record. */
  get streamTime(): number {
    return this.#state.streamTime;
  }

  get storeNames(): readonly string[] {
    return this.#stores.names;
  }

  /** The changelog partitions to replay through `restore` before the first `process`. */
  get changelogs(): readonly ChangelogPartition[] {
    return this.#stores.changelogs;
  }

  /** A record of a table's source topic that its serdes refuse is not restored (table-source-restore.ts). */
  checkRestored(store: string, key: Buffer, value: Buffer | null): RestoreRejection | undefined | Promise<RestoreRejection | undefined> {
    const { spec } = this.#stores.of(store);
    return spec.sourceTopicChangelog ? checkTableSourceRecord(spec, key, value) : undefined;
  }

  /** Applies one changelog record (null value = tombstone) to committed state. */
  restore(store: string, key: Buffer, value: Buffer | null): void {
    this.#stores.of(store).store.restore(key, value);
    for (const n of this.#stateful) n.reset();
  }

  /**
   * Processes one input record. Everything it emits (outputs, repartition records, dead letters)
   * reaches `collector` only once the record is done, and a record that fails leaves nothing behind
   * except its dead letter; its store writes reach the changelog through `prepareCommit`, and so do
   * the aggregate results a record cache holds back. Returns a promise only when an async stage is
   * involved.
   */
  process(record: IncomingRecord, collector: RecordCollector): Step {
    const state = this.#state;
    if (state.busy) throw new TaskBusyError(this.id);
    const source = this.#sources.get(record.topic);
    if (!source) throw new UnknownSourceTopicError(this.id, record.topic, this.inputTopics);
    state.begin(record);
    state.seq++;
    let r: Step;
    try {
      r = source.run(undefined, undefined);
    } catch (e) {
      return this.#fail(e, collector, undefined);
    }
    return this.#settle(r, collector, undefined);
  }

  /**
   * Ends a run through the nodes: on success its outputs go to `collector`, on a stage failure its
   * dead letter. `origin`: the input record a released cached result stands for (undefined: the record
   * being processed), which the outputs then carry as their `source`.
   */
  #settle(r: Step, collector: RecordCollector, origin: IncomingRecord | undefined): Step {
    if (r === undefined) return this.#succeed(collector, origin);
    const state = this.#state;
    state.busy = true;
    return r.then(
      () => {
        state.busy = false;
        return this.#succeed(collector, origin);
      },
      (e: unknown) => {
        state.busy = false;
        this.#fail(e, collector, origin);
      },
    );
  }

  /** Moves stream time on without a record (idle partitions, the driver's clock), closing windows; a failure is thrown, as no record can be dead-lettered. */
  advanceStreamTime(timestamp: number, collector: RecordCollector): Step {
    const state = this.#state;
    if (state.busy) throw new TaskBusyError(this.id);
    state.begin({ topic: `${this.id}-stream-time`, partition: this.partition, offset: -1, key: null, value: null, timestamp, headers: [] });
    state.seq++;
    return this.#runWithoutInput(() => state.observe(timestamp), collector, (e) => {
      this.#discard();
      throw e;
    });
  }

  #release(collector: RecordCollector, origin: IncomingRecord | undefined): void {
    const out = this.#state.out;
    this.#stores.endRecord(true);
    for (const n of this.#caching) n.cache!.endRecord(true);
    for (const n of this.#punctuating) n.endRecord(true);
    const sentWith = this.#state.origin;
    if (origin === undefined) for (let i = 0; i < out.length; i++) collector.send(out[i]!, sentWith);
    else for (let i = 0; i < out.length; i++) collector.send({ ...out[i]!, source: origin }, sentWith);
    out.length = 0;
  }

  #discard(): void {
    this.#stores.endRecord(false);
    for (const n of this.#caching) n.cache!.endRecord(false);
    for (const n of this.#punctuating) n.endRecord(false);
    this.#state.out.length = 0;
    for (const n of this.#stateful) n.reset();
  }

  #succeed(collector: RecordCollector, origin: IncomingRecord | undefined): Step {
    this.#release(collector, origin);
    if (origin !== undefined) return;
    this.#state.metrics.recordsProcessed++;
    if (this.#caching.length > 0) return this.#drain(this.#pickOverflowing, collector);
  }

  #fail(e: unknown, collector: RecordCollector, origin: IncomingRecord | undefined, input = true): void {
    this.#discard();
    if (!(e instanceof StageFailure)) throw e;
    if (origin === undefined && input) this.#state.metrics.recordsProcessed++;
    this.#state.metrics.deadLettered++;
    const dead = this.#state.failureRecord(e);
    collector.send(origin === undefined ? dead : { ...dead, source: origin }, this.#state.origin);
  }

  /** An overflowing cache's least recently updated result: past its size a cache gives up its coldest key first. */
  readonly #pickOverflowing = (): [CachingNode, CachedResult] | undefined => {
    for (const n of this.#caching) if (n.cache!.overflowing) return [n, n.cache!.takeOldest()!];
    return undefined;
  };

  /** Any held-back result, for the commit: the results of every cache go, the ones they cause downstream too. */
  readonly #pickAny = (): [CachingNode, CachedResult] | undefined => {
    for (const n of this.#caching) {
      const r = n.cache!.takeOldest();
      if (r !== undefined) return [n, r];
    }
    return undefined;
  };

  /** Sends held-back results downstream, one at a time, while `pick` finds one. */
  #drain(pick: () => [CachingNode, CachedResult] | undefined, collector: RecordCollector): Step {
    for (let next = pick(); next !== undefined; next = pick()) {
      const r = this.#releaseCached(next[0], next[1], collector);
      if (r !== undefined) return r.then(() => this.#drain(pick, collector));
    }
  }

  /**
   * Runs a held-back result through the nodes after its aggregate as if its last input record were
   * being processed again: outputs carry that record's lineage and headers, and a stage failing on
   * it dead-letters that record (its store update stays: later updates were built on it).
   */
  #releaseCached(node: CachingNode, result: CachedResult, collector: RecordCollector): Step {
    const state = this.#state;
    state.resume(result.origin);
    state.timestamp = result.timestamp;
    state.seq++;
    let r: Step;
    try {
      r = node.release(result);
    } catch (e) {
      return this.#fail(e, collector, result.record);
    }
    return this.#settle(r, collector, result.record);
  }

  /**
   * The transaction is about to commit: emits what it held back until now, the cached aggregate
   * results (to `out.send`) and then one changelog record per key written (its last value or a
   * tombstone, to `out.changelog`). Call it before the offsets go into the transaction.
   */
  prepareCommit(out: CommitCollector): Step {
    if (this.#state.busy) throw new TaskBusyError(this.id);
    if (this.#caching.length === 0) return this.#stores.flushChangelogs(out);
    const r = this.#drain(this.#pickAny, out);
    return r === undefined ? this.#stores.flushChangelogs(out) : r.then(() => this.#stores.flushChangelogs(out));
  }

  /** The transaction committed: buffered store writes become the committed state. */
  commit(): void {
    this.#stores.commit();
    for (const n of this.#punctuating) n.commit();
    this.#committedStreamTime = this.#state.streamTime;
  }

  /** The transaction aborted: every store write, held-back result and the stream time go back to the last commit. */
  rollback(): void {
    this.#stores.rollback();
    for (const n of this.#caching) n.cache!.clear();
    for (const n of this.#punctuating) n.rollback();
    this.#state.streamTime = this.#committedStreamTime;
    this.#state.out.length = 0;
    for (const n of this.#stateful) n.reset();
  }

  /** A store's current value (uncommitted included), for tests and diagnostics; window stores take a `Windowed<K>` (session stores need its `end`). */
  get(store: string, key: unknown): unknown {
    return this.#stores.get(store, key);
  }

  /** The open transaction's writes to the stores interactive queries read: a copy of committed state applies them once it commits. */
  queryableWrites(): Iterable<{ readonly store: string; readonly key: Buffer; readonly value: Buffer | null }> {
    return this.#stores.queryableWrites();
  }

  /** A versioned store's value of `key` at `asOf` (uncommitted included). */
  getAsOf(store: string, key: unknown, asOf: number): unknown {
    return this.#stores.getAsOf(store, key, asOf);
  }

  /** Reads a store's committed state only, never the open transaction's writes: what interactive queries answer from. */
  reader(store: string): StoreReader {
    return this.#stores.reader(store);
  }

  /** Every entry of a store, decoded; window stores yield `Windowed<K>` keys. */
  entries(store: string): Array<[unknown, unknown]> {
    return this.#stores.entries(store);
  }
}

/** One task of sub-topology `subtopology` for `partition` of its input topics. */
export function createTask(plan: TaskPlan, subtopology: number, partition: number, opts: TaskOptions = {}): Task {
  const sub = plan.subtopologies[subtopology];
  if (!sub) throw new UnknownSubtopologyError(subtopology, plan.subtopologies.length);
  return new Task(plan, sub, partition, opts);
}
