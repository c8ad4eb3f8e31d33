import type { CompiledStore, CompiledSubtopology, TaskPlan } from '../../graph/types.ts';
import type { CommitCollector, IncomingRecord, RecordCollector } from '../../core/records.ts';
import { inMemoryStoreFactory, type StoreFactory } from '../../state/store.ts';
import { TransactionalStore } from '../../state/transactional.ts';
import { windowStoreKey, splitWindowStoreKey } from '../../state/windowed.ts';
import { StoreReader } from '../../state/queries.ts';
import type { Windowed } from '../../dsl/types.ts';
import { createRuntimeNode } from '../nodes/registry.ts';
import type { SourceNode } from '../nodes/stateless.ts';
import { TaskState, type CachingNode, type TaskMetrics } from '../nodes/task-state.ts';
import { CacheBudget, type CachedResult } from '../nodes/record-cache.ts';
import type { PunctuatingNode, RecordCacheOptions, TaskEnvironment } from '../nodes/task-state.ts';
import { sessionStoreKey, splitSessionStoreKey } from '../../state/session.ts';
import { heldValue } from '../nodes/suppress.ts';
import { TaskBusyError, UnknownSourceTopicError, UnknownStoreError, UnknownSubtopologyError } from './task-errors.ts';
import { RecordSizeLimits } from '../../core/record-size.ts';
import type { RuntimeNode } from '../nodes/runtime-node.ts';
import type { Step } from '../nodes/step.ts';
import { StageFailure } from '../nodes/node-errors.ts';

/** A task's id: its sub-topology and the partition of its sources it reads (state directories are named after it). */
export const taskId = (subtopology: number, partition: number): string => `${subtopology}_${partition}`;


export interface TaskOptions {
  /** Committed storage per store; defaults to in-memory maps. */
  readonly storeFactory?: StoreFactory;
  /** What a record the task emits (outputs, repartition, changelog records, dead letters) may carry; default: librdkafka's message.max.bytes for every topic. */
  readonly recordLimits?: RecordSizeLimits;
  /** Wall clock for the `onceflow.error.time` header. */
  readonly now?: () => number;
  /** How retry backoff waits; tests may pass a fake. */
  readonly sleep?: (ms: number) => Promise<void>;
  /** Jitter source in [0, 1). */
  readonly random?: () => number;
  /**
   * Stream time to resume from (e.g. kept in the offset-commit metadata by the worker), so that
   * window closing and dedupe expiry replay the same way after a restart.
   */
  readonly initialStreamTime?: number;
  /**
   * The record cache: key-value aggregates hold back their latest result per key until the commit,
   * within `budget` (shared by the worker's tasks) and `maxRecords` keys per aggregate. Default: none.
   */
  readonly cache?: { readonly budget?: CacheBudget; readonly maxRecords?: number } | undefined;
  /** The global tables' rows, by store name, for global-table joins (the worker's or the test driver's). */
  readonly globalRows?: (store: string) => { row(key: unknown): unknown } | undefined;
  /** Told of each record a windowed aggregate drops as too late. */
  readonly onLateRecord?: TaskEnvironment['onLateRecord'];
}

export interface ChangelogPartition {
  readonly store: string;
  readonly topic: string;
  readonly partition: number;
  /** The table's source topic: restored up to the group's committed offset, never written, never checkpointed. */
  readonly sourceTopic?: boolean;
}

const realSleep = (ms: number): Promise<void> => new Promise((resolve) => setTimeout(resolve, ms));

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
  /** The changelog partitions to replay through `restore` before the first `process`. */
  readonly changelogs: readonly ChangelogPartition[];
  readonly #state: TaskState;
  readonly #sources = new Map<string, SourceNode>();
  readonly #stores = new Map<string, { store: TransactionalStore; spec: CompiledStore }>();
  readonly #storeList: TransactionalStore[] = [];
  /** Stores whose writes go to a changelog of their own (a table read from a topic has its topic instead). */
  readonly #loggedStores: readonly TransactionalStore[];
  readonly #stateful: RuntimeNode[] = [];
  readonly #caching: readonly CachingNode[];
  readonly #punctuating: readonly PunctuatingNode[];
  #committedStreamTime: number;

  constructor(plan: TaskPlan, sub: CompiledSubtopology, partition: number, opts: TaskOptions = {}) {
    this.id = taskId(sub.id, partition);
    this.subtopology = sub.id;
    this.partition = partition;
    this.inputTopics = sub.sourceTopics;
    this.#state = new TaskState(partition, {
      retryPolicyFor: (n) => plan.retryPolicyFor(n),
      unknownErrors: plan.unknownErrors,
      deadLetterTopic: plan.deadLetterTopic,
      now: opts.now ?? Date.now,
      sleep: opts.sleep ?? realSleep,
      random: opts.random ?? Math.random,
      cache: recordCacheOptions(opts.cache),
      recordLimits: opts.recordLimits ?? new RecordSizeLimits(),
      ...(opts.globalRows ? { globalRows: opts.globalRows } : {}),
      onLateRecord: opts.onLateRecord,
    });
    if (opts.initialStreamTime !== undefined) this.#state.streamTime = opts.initialStreamTime;
    this.#committedStreamTime = this.#state.streamTime;

    const factory = opts.storeFactory ?? inMemoryStoreFactory;
    for (const name of sub.stores) {
      const spec = plan.stores.get(name)!;
      const committed = factory({ name, kind: spec.kind, subtopology: sub.id, partition });
      const store = new TransactionalStore(name, spec.changelogTopic, partition, committed, this.#state.env.recordLimits);
      this.#stores.set(name, { store, spec });
      this.#storeList.push(store);
    }
    this.changelogs = sub.stores.map((s) => {
      const spec = this.#stores.get(s)!.spec;
      return { store: s, topic: spec.changelogTopic, partition, ...(spec.sourceTopicChangelog ? { sourceTopic: true } : {}) };
    });
    this.#loggedStores = this.#storeList.filter((s) => !this.#stores.get(s.name)!.spec.sourceTopicChangelog);

    const rt = new Map<string, RuntimeNode>();
    for (const n of sub.nodes) {
      const node = createRuntimeNode(this.#state, n, (s) => this.#stores.get(s)!, (name) => rt.get(name)!);
      rt.set(n.name, node);
      if (n.kind === 'source' || n.kind === 'repartitionSource') this.#sources.set(n.topic!, node as SourceNode);
      if (n.stores.length > 0) this.#stateful.push(node);
    }
    for (const n of sub.nodes) rt.get(n.name)!.children = n.children.map((c) => rt.get(c)!.inputFrom(n.name));
    this.#caching = this.#state.caching;
    this.#punctuating = this.#state.punctuating;
  }

  /** No store, record cache or punctuation: nothing a rollback must undo (worker-topology.ts). */
  get stateless(): boolean {
    return this.#storeList.length === 0 && this.#caching.length === 0 && this.#punctuating.length === 0 && this.#stateful.length === 0 && this.#state.timeListeners.length === 0;
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
    return [...this.#stores.keys()];
  }

  #store(name: string): { store: TransactionalStore; spec: CompiledStore } {
    const s = this.#stores.get(name);
    if (!s) throw new UnknownStoreError(this.id, name);
    return s;
  }

  /** Applies one changelog record (null value = tombstone) to committed state. */
  restore(store: string, key: Buffer, value: Buffer | null): void {
    this.#store(store).store.restore(key, value);
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

  /**
   * Moves stream time forward without a record (idle partitions, the test driver's clock), which
   * closes windows. Has no input record, so a failure here is thrown rather than dead-lettered.
   */
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
    for (const s of this.#storeList) s.endRecord(true);
    for (const n of this.#caching) n.cache!.endRecord(true);
    for (const n of this.#punctuating) n.endRecord(true);
    const sentWith = this.#state.origin;
    if (origin === undefined) for (let i = 0; i < out.length; i++) collector.send(out[i]!, sentWith);
    else for (let i = 0; i < out.length; i++) collector.send({ ...out[i]!, source: origin }, sentWith);
    out.length = 0;
  }

  #discard(): void {
    for (const s of this.#storeList) s.endRecord(false);
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
    if (this.#caching.length === 0) return this.#flushChangelogs(out);
    const r = this.#drain(this.#pickAny, out);
    return r === undefined ? this.#flushChangelogs(out) : r.then(() => this.#flushChangelogs(out));
  }

  #flushChangelogs(out: CommitCollector): void {
    for (const s of this.#loggedStores) s.flushChangelog(out.changelog);
  }

  /** The transaction committed: buffered store writes become the committed state. */
  commit(): void {
    for (const s of this.#storeList) s.commit();
    for (const n of this.#punctuating) n.commit();
    this.#committedStreamTime = this.#state.streamTime;
  }

  /** The transaction aborted: every store write, held-back result and the stream time go back to the last commit. */
  rollback(): void {
    for (const s of this.#storeList) s.rollback();
    for (const n of this.#caching) n.cache!.clear();
    for (const n of this.#punctuating) n.rollback();
    this.#state.streamTime = this.#committedStreamTime;
    this.#state.out.length = 0;
    for (const n of this.#stateful) n.reset();
  }

  /**
   * Reads a store's current (uncommitted included) value. Window stores take a `Windowed<K>` key
   * (`end` is ignored; session stores need it). For tests and diagnostics, not the hot path.
   */
  get(store: string, key: unknown): unknown {
    const { store: s, spec } = this.#store(store);
    const kctx = { topic: spec.changelogTopic, role: 'key' as const };
    let kb: Buffer;
    if (spec.session) {
      const w = key as Windowed<unknown>;
      kb = sessionStoreKey(spec.keySerde.serialize(w.key, kctx) ?? Buffer.alloc(0), w.start, w.end);
    } else if (spec.window) {
      const w = key as Windowed<unknown>;
      kb = windowStoreKey(spec.keySerde.serialize(w.key, kctx) ?? Buffer.alloc(0), w.start);
    } else kb = spec.keySerde.serialize(key, kctx) ?? Buffer.alloc(0);
    const v = s.get(kb);
    return v === undefined ? undefined : decodeStored(spec, v);
  }

  /** Reads a store's committed state only, never the open transaction's writes: what interactive queries answer from. */
  reader(store: string): StoreReader {
    const { store: s, spec } = this.#store(store);
    return new StoreReader(spec, s.committed);
  }

  /** Every entry of a store, decoded; window stores yield `Windowed<K>` keys. */
  entries(store: string): Array<[unknown, unknown]> {
    const { store: s, spec } = this.#store(store);
    const kctx = { topic: spec.changelogTopic, role: 'key' as const };
    const out: Array<[unknown, unknown]> = [];
    for (const [k, v] of s.entries()) {
      let key: unknown;
      if (spec.session) {
        const { inner, start, end } = splitSessionStoreKey(k);
        key = { key: spec.keySerde.deserialize(inner, kctx), start, end };
      } else if (spec.window) {
        const { inner, start } = splitWindowStoreKey(k);
        key = { key: spec.keySerde.deserialize(inner, kctx), start, end: start + spec.window.sizeMs };
      } else key = spec.keySerde.deserialize(k, kctx);
      out.push([key, decodeStored(spec, v)]);
    }
    return out;
  }
}

/** A stored value as its stage knows it: a suppression buffer's, the update it holds back. */
function decodeStored(spec: CompiledStore, bytes: Buffer): unknown {
  const ctx = { topic: spec.changelogTopic, role: 'value' as const };
  if (spec.kind !== 'suppress') return spec.valueSerde.deserialize(bytes, ctx);
  const held = heldValue(bytes);
  return held === null ? null : spec.valueSerde.deserialize(held, ctx);
}

/** No cache at all, or one within a byte budget (unbounded when not given) and a key count per aggregate. */
function recordCacheOptions(cache: TaskOptions['cache']): RecordCacheOptions | undefined {
  if (cache === undefined || cache.maxRecords === 0 || cache.budget?.maxBytes === 0) return undefined;
  return { budget: cache.budget ?? new CacheBudget(Number.POSITIVE_INFINITY), maxRecords: cache.maxRecords ?? Number.POSITIVE_INFINITY };
}

/** One task of sub-topology `subtopology` for `partition` of its input topics. */
export function createTask(plan: TaskPlan, subtopology: number, partition: number, opts: TaskOptions = {}): Task {
  const sub = plan.subtopologies[subtopology];
  if (!sub) throw new UnknownSubtopologyError(subtopology, plan.subtopologies.length);
  return new Task(plan, sub, partition, opts);
}
