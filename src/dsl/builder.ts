import type { Serde } from '../serdes/serde.ts';
import type { JoinerFn, KeyValueFn, NodeDef, StageSpec, ValueOnlyFn } from './nodes.ts';
import { JoinWindows } from './windows.ts';
import { SessionWindows, type SessionWindowSpec } from './session-windows.ts';
import type { SuppressSpec } from './suppress.ts';
import type { ProcessFn, ProcessorOptions, PunctuationSpec } from './processor.ts';
import type { HeadersUpdate, RecordContext } from './headers.ts';
import type {
  AggregateOptions,
  CountOptions,
  DeadLetterOptions,
  DedupeOptions,
  EffectContext,
  EffectOptions,
  GroupByKeyOptions,
  GroupByOptions,
  JoinOptions,
  StreamJoinOptions,
  TableSourceOptions,
  ToTableOptions,
  KeySerdeOptions,
  KeyValue,
  KeyValueSerdeOptions,
  LatestByVersionOptions,
  NamedOptions,
  ReduceOptions,
  SerdeFor,
  SinkOptions,
  SourceOptions,
  TopologyOptions,
  ValueSerdeOptions,
  Windowed,
  WindowSpec,
} from './types.ts';
import { windowedSerde } from '../state/windowed.ts';
import { countSerde } from '../state/internal-serdes.ts';

/** Lets loadTopology recognise a builder even if it came from another copy of this module. */
export const TOPOLOGY_BUILDER_BRAND: unique symbol = Symbol.for('onceflow.TopologyBuilder') as never;

type AnySerde = Serde<unknown>;
/** Accepting `Serde<T | null>` for T is a typing convenience; at run time the serde is the same object. */
const asSerde = (s: SerdeFor<unknown> | undefined): never => s as never;
const COUNT_INIT = (): number => 0;
const COUNT_FN = (_k: unknown, _v: unknown, agg: unknown): number => (agg as number) + 1;
const NO_INIT = (): undefined => undefined;
const NO_PROCESS = (): void => undefined;
const SUM_COUNTS = (_k: unknown, a: unknown, b: unknown): number => (a as number) + (b as number);

/**
 * Records the topology as an append-only list of nodes. Streams are immutable handles on a node:
 * every operation appends a node and returns a new handle, so a stream can feed several branches.
 * Building does no I/O; `compile` validates and plans.
 */
export class TopologyBuilder {
  readonly [TOPOLOGY_BUILDER_BRAND] = true;
  readonly #nodes: NodeDef[] = [];
  #options: TopologyOptions;

  constructor(options: TopologyOptions) {
    this.#options = { ...options };
  }

  get options(): TopologyOptions {
    return this.#options;
  }

  /** The node list, in creation order. */
  get nodes(): readonly NodeDef[] {
    return this.#nodes;
  }

  /** Records the file the topology came from, for error messages. */
  setSourceFile(file: string): void {
    this.#options = { ...this.#options, sourceFile: file };
  }

  stream<K, V>(topic: string, opts: SourceOptions<K, V> & { readonly key: Serde<K> }): Stream<K, V>;
  stream<V>(topic: string, opts: SourceOptions<null, V>): Stream<null, V>;
  stream<K, V>(topic: string, opts: SourceOptions<K, V>): Stream<K, V> {
    const spec: StageSpec = opts.timestamp
      ? { kind: 'source', topic, timestamp: opts.timestamp as (k: unknown, v: unknown, ts: number) => number }
      : { kind: 'source', topic };
    const index = this.addNode(spec, [], opts.name, asSerde(opts.key) as AnySerde | undefined, asSerde(opts.value) as AnySerde);
    return new Stream<K, V>(this, index, asSerde(opts.key), asSerde(opts.value));
  }

  /**
   * A table whose rows are the latest value per key of `topic` (a null value deletes the row). It is
   * kept in a store with a changelog, written in the same transaction as everything else.
   */
  table<K, V>(topic: string, opts: TableSourceOptions<K, V>): Table<K, V> {
    const source = this.addNode({ kind: 'source', topic, table: true }, [], undefined, opts.key as AnySerde, opts.value as AnySerde);
    const spec: StageSpec = { kind: 'toTable', ...(opts.store !== undefined ? { store: opts.store } : {}) };
    const index = this.addNode(spec, [source], opts.name, opts.key as AnySerde, opts.value as AnySerde);
    return new Table<K, V>(this, index, opts.key, opts.value);
  }

  /**
   * A read-only table every worker loads whole from `topic` before it processes anything, and keeps
   * up to date while it runs, outside the transaction. Streams join it by a key they compute, so it
   * needs no co-partitioning.
   */
  globalTable<K, V>(topic: string, opts: TableSourceOptions<K, V>): GlobalTable<K, V> {
    const spec: StageSpec = { kind: 'globalTable', topic, ...(opts.store !== undefined ? { store: opts.store } : {}) };
    const index = this.addNode(spec, [], opts.name, opts.key as AnySerde, opts.value as AnySerde);
    return new GlobalTable<K, V>(this, index, opts.key, opts.value);
  }

  /** @internal */
  addNode(spec: StageSpec, parents: readonly number[], userName: string | undefined, keySerde: AnySerde | undefined, valueSerde: AnySerde | undefined): number {
    const index = this.#nodes.length;
    const def: NodeDef = { index, spec, parents, ...(userName !== undefined ? { userName } : {}), ...(keySerde ? { keySerde } : {}), ...(valueSerde ? { valueSerde } : {}) };
    this.#nodes.push(Object.freeze(def));
    return index;
  }
}

export function isTopologyBuilder(x: unknown): x is TopologyBuilder {
  return typeof x === 'object' && x !== null && (x as { [TOPOLOGY_BUILDER_BRAND]?: unknown })[TOPOLOGY_BUILDER_BRAND] === true;
}

/**
 * A record stream with keys K and values V. Every function given a record's key takes `(key, value)`
 * first, then any extra argument; `mapValues`, `flatMapValues` and `reduce` take values only.
 */
export class Stream<K, V> {
  /** @internal */
  constructor(
    readonly builder: TopologyBuilder,
    readonly nodeIndex: number,
    readonly keySerde: Serde<K> | undefined,
    readonly valueSerde: Serde<V> | undefined,
  ) {}

  #next<K2, V2>(spec: StageSpec, opts: NamedOptions | undefined, key: Serde<K2> | undefined, value: Serde<V2> | undefined, extraParents: readonly number[] = []): Stream<K2, V2> {
    const index = this.builder.addNode(spec, [this.nodeIndex, ...extraParents], opts?.name, key as AnySerde | undefined, value as AnySerde | undefined);
    return new Stream<K2, V2>(this.builder, index, key, value);
  }

  filter(predicate: (key: K, value: V, ctx: RecordContext) => boolean, opts?: NamedOptions): Stream<K, V> {
    return this.#next({ kind: 'filter', fn: predicate as KeyValueFn, negate: false }, opts, this.keySerde, this.valueSerde);
  }

  filterNot(predicate: (key: K, value: V, ctx: RecordContext) => boolean, opts?: NamedOptions): Stream<K, V> {
    return this.#next({ kind: 'filter', fn: predicate as KeyValueFn, negate: true }, opts, this.keySerde, this.valueSerde);
  }

  map<K2, V2>(fn: (key: K, value: V, ctx: RecordContext) => KeyValue<K2, V2>, opts?: KeyValueSerdeOptions<K2, V2>): Stream<K2, V2> {
    return this.#next({ kind: 'map', fn: fn as KeyValueFn }, opts, asSerde(opts?.key), asSerde(opts?.value));
  }

  /** Sees the value only. A function that needs the key is a `map`, after which a stateful stage repartitions (the key may have changed). */
  mapValues<W>(fn: (value: V, ctx: RecordContext) => W, opts?: ValueSerdeOptions<W>): Stream<K, W> {
    return this.#next({ kind: 'mapValues', fn: fn as ValueOnlyFn }, opts, this.keySerde, asSerde(opts?.value));
  }

  flatMap<K2, V2>(fn: (key: K, value: V, ctx: RecordContext) => Iterable<KeyValue<K2, V2>>, opts?: KeyValueSerdeOptions<K2, V2>): Stream<K2, V2> {
    return this.#next({ kind: 'flatMap', fn: fn as KeyValueFn }, opts, asSerde(opts?.key), asSerde(opts?.value));
  }

  flatMapValues<W>(fn: (value: V, ctx: RecordContext) => Iterable<W>, opts?: ValueSerdeOptions<W>): Stream<K, W> {
    return this.#next({ kind: 'flatMapValues', fn: fn as ValueOnlyFn }, opts, this.keySerde, asSerde(opts?.value));
  }

  selectKey<K2>(fn: (key: K, value: V, ctx: RecordContext) => K2, opts?: KeySerdeOptions<K2>): Stream<K2, V> {
    return this.#next({ kind: 'selectKey', fn: fn as KeyValueFn }, opts, asSerde(opts?.key), this.valueSerde);
  }

  /** Routes each record to the first branch whose predicate holds; others go to `default` if named, else are dropped. */
  branch<N extends string, D extends string = never>(
    predicates: { readonly [P in N]: (key: K, value: V, ctx: RecordContext) => boolean },
    opts?: NamedOptions & { readonly default?: D },
  ): { readonly [P in N | D]: Stream<K, V> } {
    const entries = Object.entries(predicates) as [string, (key: K, value: V, ctx: RecordContext) => boolean][];
    const branches = entries.map(([name, fn]) => ({ name, fn: fn as KeyValueFn }));
    if (opts?.default !== undefined) branches.push({ name: opts.default, fn: () => true });
    const branchNode = this.#next<K, V>({ kind: 'branch', branches }, opts, this.keySerde, this.valueSerde);
    const out: Record<string, Stream<K, V>> = {};
    for (const b of branches) {
      const idx = this.builder.addNode({ kind: 'branchChild', branch: b.name }, [branchNode.nodeIndex], undefined, this.keySerde as AnySerde | undefined, this.valueSerde as AnySerde | undefined);
      out[b.name] = new Stream<K, V>(this.builder, idx, this.keySerde, this.valueSerde);
    }
    return out as { readonly [P in N | D]: Stream<K, V> };
  }

  merge(other: Stream<K, V>, opts?: NamedOptions): Stream<K, V> {
    const key = other.keySerde === this.keySerde ? this.keySerde : undefined;
    const value = other.valueSerde === this.valueSerde ? this.valueSerde : undefined;
    return this.#next({ kind: 'merge' }, opts, key, value, [other.nodeIndex]);
  }

  /**
   * Calls `fn` for each record and ends the stream there (Kafka Streams' `foreach`). Like `peek`, it runs
   * inside the transaction's processing, so a replay calls it again: for an external call use `effect`.
   */
  foreach(fn: (key: K, value: V, ctx: RecordContext) => void, opts?: NamedOptions): void {
    this.#next({ kind: 'foreach', fn: fn as KeyValueFn }, opts, this.keySerde, this.valueSerde);
  }

  peek(fn: (key: K, value: V, ctx: RecordContext) => void, opts?: NamedOptions): Stream<K, V> {
    return this.#next({ kind: 'peek', fn: fn as KeyValueFn }, opts, this.keySerde, this.valueSerde);
  }

  /**
   * Sets the headers of what this record becomes downstream (outputs, repartition topics): `fn` gets
   * the record's headers as `ctx.headers` and returns the new ones, e.g. `ctx.headers.with('trace', id)`
   * or `{ source: 'shop' }` (which replaces them all).
   */
  setHeaders(fn: (key: K, value: V, ctx: RecordContext) => HeadersUpdate, opts?: NamedOptions): Stream<K, V> {
    return this.#next({ kind: 'setHeaders', fn: fn as KeyValueFn }, opts, this.keySerde, this.valueSerde);
  }

  /**
   * Inbox pattern kept inside Kafka: remembers each id (with the stream time it was first seen) in a
   * changelogged store and drops records whose id was seen less than `ttlMs` ago.
   */
  dedupe(idFn: (key: K, value: V) => string, opts: DedupeOptions): Stream<K, V> {
    const spec: StageSpec = { kind: 'dedupe', fn: idFn as KeyValueFn, ttlMs: opts.ttlMs, ...(opts.store !== undefined ? { store: opts.store } : {}) };
    return this.#next(spec, opts, this.keySerde, this.valueSerde);
  }

  /** Version guard: passes a record only if its version is greater than the last one passed for its key. */
  latestByVersion(versionFn: (key: K, value: V) => number, opts?: LatestByVersionOptions): Stream<K, V> {
    const spec: StageSpec = { kind: 'latestByVersion', fn: versionFn as KeyValueFn, ...(opts?.store !== undefined ? { store: opts.store } : {}) };
    return this.#next(spec, opts, this.keySerde, this.valueSerde);
  }

  /**
   * A side effect outside Kafka (HTTP call, database write). It is at-least-once: after a crash or an
   * aborted transaction it runs again with the same idempotency key, which the target must dedupe on.
   */
  effect(name: string, fn: (key: K, value: V, ctx: EffectContext<K>) => Promise<unknown>, opts?: EffectOptions<K, V>): Stream<K, V> {
    const spec: StageSpec = {
      kind: 'effect',
      fn: fn as (key: unknown, value: unknown, ctx: EffectContext<unknown>) => Promise<unknown>,
      ...(opts?.idempotencyKey ? { idempotencyKey: opts.idempotencyKey as KeyValueFn } : {}),
      ...(opts?.retry ? { retry: opts.retry } : {}),
    };
    return this.#next(spec, { name }, this.keySerde, this.valueSerde);
  }

  /** The table's rows as they change; a deleted row arrives as a null value. */
  toTable(opts?: ToTableOptions<K, V>): Table<K, V> {
    const key = asSerde(opts?.key) ?? this.keySerde;
    const value = asSerde(opts?.value) ?? this.valueSerde;
    const spec: StageSpec = { kind: 'toTable', ...(opts?.store !== undefined ? { store: opts.store } : {}) };
    const index = this.builder.addNode(spec, [this.nodeIndex], opts?.name, key as AnySerde | undefined, value as AnySerde | undefined);
    return new Table<K, V>(this.builder, index, key, value);
  }

  /**
   * Joins each record with the table's row for its key as of that record (a table update alone emits
   * nothing); records without a row are dropped. Both inputs must be co-partitioned; a re-keyed
   * stream is repartitioned first.
   */
  join<T, R>(table: Table<K, T> | Table<K | null, T>, joiner: (key: K, value: V, tableValue: T) => R, opts?: JoinOptions<R>): Stream<K, R>;
  /** Joins records of the two streams whose timestamps are within the window of each other. */
  join<VO, R>(other: Stream<K, VO>, joiner: (key: K, value: V, otherValue: VO) => R, windows: JoinWindows, opts?: StreamJoinOptions<K, V, VO, R>): Stream<K, R>;
  /** Joins each record with the global table's row for `keySelector(key, value)`; records without one are dropped. */
  join<GK, GV, R>(table: GlobalTable<GK, GV>, keySelector: (key: K, value: V) => GK, joiner: (key: K, value: V, tableValue: GV) => R, opts?: JoinOptions<R>): Stream<K, R>;
  join(other: Table<K | null, unknown> | Stream<K, unknown> | GlobalTable<unknown, unknown>, fn: unknown, third?: unknown, fourth?: unknown): Stream<K, unknown> {
    return this.#join('inner', other, fn, third, fourth);
  }

  /** As `join`, but a record without a row is joined with null. */
  leftJoin<T, R>(table: Table<K, T> | Table<K | null, T>, joiner: (key: K, value: V, tableValue: NoInfer<T> | null) => R, opts?: JoinOptions<R>): Stream<K, R>;
  /** As `join`; a record without a match in its window is joined with null once its window closes. */
  leftJoin<VO, R>(other: Stream<K, VO>, joiner: (key: K, value: V, otherValue: NoInfer<VO> | null) => R, windows: JoinWindows, opts?: StreamJoinOptions<K, V, VO, R>): Stream<K, R>;
  leftJoin<GK, GV, R>(table: GlobalTable<GK, GV>, keySelector: (key: K, value: V) => GK, joiner: (key: K, value: V, tableValue: NoInfer<GV> | null) => R, opts?: JoinOptions<R>): Stream<K, R>;
  leftJoin(other: Table<K | null, unknown> | Stream<K, unknown> | GlobalTable<unknown, unknown>, fn: unknown, third?: unknown, fourth?: unknown): Stream<K, unknown> {
    return this.#join('left', other, fn, third, fourth);
  }

  /** As the windowed `leftJoin`, for both sides: a record of either side without a match is joined with null once its window closes. */
  outerJoin<VO, R>(other: Stream<K, VO>, joiner: (key: K, value: V | null, otherValue: NoInfer<VO> | null) => R, windows: JoinWindows, opts?: StreamJoinOptions<K, V, VO, R>): Stream<K, R> {
    return this.#join('outer', other, joiner, windows, opts) as Stream<K, R>;
  }

  #join(mode: 'inner' | 'left' | 'outer', other: Table<K | null, unknown> | Stream<K, unknown> | GlobalTable<unknown, unknown>, fn: unknown, third: unknown, fourth: unknown): Stream<K, unknown> {
    if (other instanceof Stream && third instanceof JoinWindows) {
      const opts = fourth as StreamJoinOptions<unknown, unknown, unknown, unknown> | undefined;
      const spec: StageSpec = {
        kind: 'streamStreamJoin',
        mode,
        joiner: fn as JoinerFn,
        window: third.spec,
        ...(asSerde(opts?.key) ?? this.keySerde ? { keySerde: (asSerde(opts?.key) ?? this.keySerde) as AnySerde } : {}),
        ...(asSerde(opts?.thisValue) ?? this.valueSerde ? { thisValueSerde: (asSerde(opts?.thisValue) ?? this.valueSerde) as AnySerde } : {}),
        ...(asSerde(opts?.otherValue) ?? other.valueSerde ? { otherValueSerde: (asSerde(opts?.otherValue) ?? other.valueSerde) as AnySerde } : {}),
        ...(opts?.store !== undefined ? { store: opts.store } : {}),
      };
      return this.#next(spec, opts, this.keySerde, asSerde(opts?.value), [other.nodeIndex]);
    }
    if (other instanceof GlobalTable) {
      const opts = fourth as JoinOptions<unknown> | undefined;
      const spec: StageSpec = { kind: 'globalTableJoin', mode: mode === 'outer' ? 'left' : mode, keySelector: fn as KeyValueFn, joiner: third as JoinerFn };
      return this.#next(spec, opts, this.keySerde, asSerde(opts?.value), [other.nodeIndex]);
    }
    const opts = third as JoinOptions<unknown> | undefined;
    const spec: StageSpec = { kind: 'streamTableJoin', mode: mode === 'outer' ? 'left' : mode, joiner: fn as JoinerFn };
    return this.#next(spec, opts, this.keySerde, asSerde(opts?.value), [other.nodeIndex]);
  }

  /**
   * A processor of your own (Kafka Streams' Processor API): it forwards any number of records per input,
   * may keep a key-value store and schedules punctuations on stream time or wall-clock time. Forwarded
   * records may carry any key, so a stateful stage after it repartitions.
   */
  process<KO, VO, SK = never, S = never>(processor: ProcessorOptions<K, V, KO, VO, SK, S>): Stream<KO, VO> {
    const state = processor.state;
    const spec: StageSpec = {
      kind: 'process',
      fn: (processor.process ?? NO_PROCESS) as ProcessFn,
      punctuations: (processor.punctuate ?? []) as readonly PunctuationSpec[],
      ...(state ? { state: { keySerde: state.key as AnySerde, valueSerde: state.value as AnySerde, ...(state.store !== undefined ? { store: state.store } : {}) } } : {}),
    };
    return this.#next(spec, processor, asSerde(processor.key), asSerde(processor.value));
  }

  groupByKey(opts?: GroupByKeyOptions<K, V>): GroupedStream<K, V> {
    return new GroupedStream<K, V>(this.builder, this.nodeIndex, asSerde(opts?.key) ?? this.keySerde, asSerde(opts?.value) ?? this.valueSerde);
  }

  groupBy<K2>(fn: (key: K, value: V, ctx: RecordContext) => K2, opts: GroupByOptions<K2, V>): GroupedStream<K2, V> {
    const value = asSerde(opts.value) ?? this.valueSerde;
    const key = asSerde(opts.key)!;
    const s = this.#next<K2, V>({ kind: 'groupBy', fn: fn as KeyValueFn }, opts, key, value);
    return new GroupedStream<K2, V>(this.builder, s.nodeIndex, key, value);
  }

  to(topic: string, opts?: SinkOptions<K, V>): void {
    this.#next({ kind: 'sink', topic }, opts, asSerde(opts?.key) ?? this.keySerde, asSerde(opts?.value) ?? this.valueSerde);
  }

  /** Sends the input record that produced each record of this stream to the dead-letter topic. */
  toDeadLetter(opts?: DeadLetterOptions): void {
    const spec: StageSpec = opts?.reason !== undefined ? { kind: 'deadLetter', reason: opts.reason } : { kind: 'deadLetter' };
    this.#next(spec, opts, this.keySerde, this.valueSerde);
  }
}

/** Shared by grouped and windowed-grouped streams: records the aggregate node. */
abstract class Grouping<K, V> {
  /** @internal */
  constructor(
    readonly builder: TopologyBuilder,
    readonly nodeIndex: number,
    readonly keySerde: Serde<K> | undefined,
    readonly valueSerde: Serde<V> | undefined,
    readonly window: WindowSpec | SessionWindowSpec | undefined,
  ) {}

  protected addAggregate<KO, A>(
    mode: 'aggregate' | 'reduce' | 'count',
    init: () => unknown,
    fn: (key: unknown, value: unknown, agg: unknown) => unknown,
    state: Serde<A> | undefined,
    opts: (NamedOptions & { readonly store?: string }) | undefined,
    merger?: (key: unknown, left: unknown, right: unknown) => unknown,
  ): Table<KO, A> {
    const w = this.window;
    const spec: StageSpec = {
      kind: 'aggregate',
      mode,
      init,
      fn,
      ...(state ? { stateSerde: state as AnySerde } : {}),
      ...(w === undefined ? {} : w.type === 'session' ? { session: w } : { window: w }),
      ...(merger ? { merger } : {}),
      ...(this.keySerde ? { groupKeySerde: this.keySerde as AnySerde } : {}),
      ...(this.valueSerde ? { groupValueSerde: this.valueSerde as AnySerde } : {}),
      ...(opts?.store !== undefined ? { store: opts.store } : opts?.name !== undefined ? { store: opts.name } : {}),
    };
    const outKey = (this.window ? (this.keySerde ? windowedSerde(this.keySerde) : undefined) : this.keySerde) as Serde<KO> | undefined;
    const index = this.builder.addNode(spec, [this.nodeIndex], opts?.name, outKey as AnySerde | undefined, state as AnySerde | undefined);
    return new Table<KO, A>(this.builder, index, outKey, state);
  }

  protected reduceWith<KO>(reducer: (aggregate: V, value: V) => V, opts: ReduceOptions<V> | undefined): Table<KO, V> {
    const r = reducer as (a: unknown, v: unknown) => unknown;
    const fn = (_k: unknown, v: unknown, agg: unknown): unknown => (agg === undefined ? v : r(agg, v));
    // Sessions merge with the reducer too: the aggregate of an empty merge so far is undefined.
    const merger = (_k: unknown, a: unknown, b: unknown): unknown => (a === undefined ? b : b === undefined ? a : r(a, b));
    return this.addAggregate<KO, V>('reduce', NO_INIT, fn, asSerde(opts?.state) ?? this.valueSerde, opts, merger);
  }
}

/** The result of grouping: records that will be aggregated per key (after a repartition if the key changed). */
export class GroupedStream<K, V> extends Grouping<K, V> {
  /** @internal */
  constructor(builder: TopologyBuilder, nodeIndex: number, keySerde: Serde<K> | undefined, valueSerde: Serde<V> | undefined) {
    super(builder, nodeIndex, keySerde, valueSerde, undefined);
  }

  aggregate<A>(init: () => A, aggregator: (key: K, value: V, aggregate: A) => A, opts: AggregateOptions<A>): Table<K, A> {
    return this.addAggregate<K, A>('aggregate', init, aggregator as (k: unknown, v: unknown, a: unknown) => unknown, asSerde(opts.state), opts);
  }

  reduce(reducer: (aggregate: V, value: V) => V, opts?: ReduceOptions<V>): Table<K, V> {
    return this.reduceWith<K>(reducer, opts);
  }

  count(opts?: CountOptions): Table<K, number> {
    return this.addAggregate<K, number>('count', COUNT_INIT, COUNT_FN, countSerde, opts);
  }

  windowedBy(window: WindowSpec): WindowedGroupedStream<K, V>;
  windowedBy(window: SessionWindows): SessionWindowedGroupedStream<K, V>;
  windowedBy(window: WindowSpec | SessionWindows): WindowedGroupedStream<K, V> | SessionWindowedGroupedStream<K, V> {
    if (window instanceof SessionWindows) return new SessionWindowedGroupedStream<K, V>(this.builder, this.nodeIndex, this.keySerde, this.valueSerde, window.spec);
    return new WindowedGroupedStream<K, V>(this.builder, this.nodeIndex, this.keySerde, this.valueSerde, window);
  }
}

/**
 * Grouped records aggregated per key and session; the table's key is `Windowed<K>` with the session's
 * first and last record time as start and end. When a record bridges sessions they merge: the merged
 * session is a new row, and the ones merged away are deleted (a null value downstream).
 */
export class SessionWindowedGroupedStream<K, V> extends Grouping<K, V> {
  /** @internal */
  constructor(builder: TopologyBuilder, nodeIndex: number, keySerde: Serde<K> | undefined, valueSerde: Serde<V> | undefined, window: SessionWindowSpec) {
    super(builder, nodeIndex, keySerde, valueSerde, window);
  }

  /** `merger(key, a, b)` combines the aggregates of two sessions a record bridges. */
  aggregate<A>(init: () => A, aggregator: (key: K, value: V, aggregate: A) => A, merger: (key: K, left: A, right: A) => A, opts: AggregateOptions<A>): Table<Windowed<K>, A> {
    return this.addAggregate<Windowed<K>, A>('aggregate', init, aggregator as (k: unknown, v: unknown, a: unknown) => unknown, asSerde(opts.state), opts, merger as (k: unknown, a: unknown, b: unknown) => unknown);
  }

  reduce(reducer: (aggregate: V, value: V) => V, opts?: ReduceOptions<V>): Table<Windowed<K>, V> {
    return this.reduceWith<Windowed<K>>(reducer, opts);
  }

  count(opts?: CountOptions): Table<Windowed<K>, number> {
    return this.addAggregate<Windowed<K>, number>('count', COUNT_INIT, COUNT_FN, countSerde, opts, SUM_COUNTS);
  }
}

/** Grouped records aggregated per key and event-time window; the table's key is `Windowed<K>`. */
export class WindowedGroupedStream<K, V> extends Grouping<K, V> {
  /** @internal */
  constructor(builder: TopologyBuilder, nodeIndex: number, keySerde: Serde<K> | undefined, valueSerde: Serde<V> | undefined, window: WindowSpec) {
    super(builder, nodeIndex, keySerde, valueSerde, window);
  }

  aggregate<A>(init: () => A, aggregator: (key: K, value: V, aggregate: A) => A, opts: AggregateOptions<A>): Table<Windowed<K>, A> {
    return this.addAggregate<Windowed<K>, A>('aggregate', init, aggregator as (k: unknown, v: unknown, a: unknown) => unknown, asSerde(opts.state), opts);
  }

  reduce(reducer: (aggregate: V, value: V) => V, opts?: ReduceOptions<V>): Table<Windowed<K>, V> {
    return this.reduceWith<Windowed<K>>(reducer, opts);
  }

  count(opts?: CountOptions): Table<Windowed<K>, number> {
    return this.addAggregate<Windowed<K>, number>('count', COUNT_INIT, COUNT_FN, countSerde, opts);
  }
}

/**
 * A changing table: the latest value per key. Built by `builder.table`, `stream.toTable`, an
 * aggregation or a table-table join; `toStream` turns every update into a record (a deleted row into
 * a null value). `filter` and `mapValues` see live rows only.
 */
export class Table<K, V> {
  /** @internal */
  constructor(
    readonly builder: TopologyBuilder,
    readonly nodeIndex: number,
    readonly keySerde: Serde<K> | undefined,
    readonly valueSerde: Serde<V> | undefined,
  ) {}

  #next<V2>(spec: StageSpec, opts: NamedOptions | undefined, value: Serde<V2> | undefined, extraParents: readonly number[] = []): Table<K, V2> {
    const index = this.builder.addNode(spec, [this.nodeIndex, ...extraParents], opts?.name, this.keySerde as AnySerde | undefined, value as AnySerde | undefined);
    return new Table<K, V2>(this.builder, index, this.keySerde, value);
  }

  toStream(opts?: NamedOptions): Stream<K, V> {
    const index = this.builder.addNode({ kind: 'toStream' }, [this.nodeIndex], opts?.name, this.keySerde as AnySerde | undefined, this.valueSerde as AnySerde | undefined);
    return new Stream<K, V>(this.builder, index, this.keySerde, this.valueSerde);
  }

  /** Rows the predicate rejects are deleted from the result (a tombstone goes downstream). */
  filter(predicate: (key: K, value: V) => boolean, opts?: NamedOptions): Table<K, V> {
    return this.#next({ kind: 'tableFilter', fn: predicate as KeyValueFn, negate: false }, opts, this.valueSerde);
  }

  filterNot(predicate: (key: K, value: V) => boolean, opts?: NamedOptions): Table<K, V> {
    return this.#next({ kind: 'tableFilter', fn: predicate as KeyValueFn, negate: true }, opts, this.valueSerde);
  }

  mapValues<W>(fn: (value: V, ctx: RecordContext) => W, opts?: ValueSerdeOptions<W>): Table<K, W> {
    return this.#next({ kind: 'tableMapValues', fn: fn as ValueOnlyFn }, opts, asSerde(opts?.value));
  }

  /**
   * Holds updates back: `Suppressed.untilWindowCloses()` (a windowed aggregate's table, maybe through
   * filter/mapValues) emits each window's final result once it closes; `Suppressed.untilTimeLimit(ms)`
   * emits at most one update per key per `ms` of stream time. The buffer is a store with a changelog.
   */
  suppress(suppressed: SuppressSpec, opts?: NamedOptions & { readonly store?: string }): Table<K, V> {
    const window = upstreamWindow(this.builder, this.nodeIndex);
    const spec: StageSpec = { kind: 'suppress', suppress: suppressed, ...(window ? { window } : {}), ...(opts?.store !== undefined ? { store: opts.store } : {}) };
    return this.#next(spec, opts, this.valueSerde);
  }

  /** A row for every key both tables have; it changes when either side does. */
  join<VO, R>(other: Table<K, VO>, joiner: (key: K, value: V, otherValue: VO) => R, opts?: JoinOptions<R>): Table<K, R> {
    return this.#next({ kind: 'tableTableJoin', mode: 'inner', joiner: joiner as JoinerFn }, opts, asSerde(opts?.value), [other.nodeIndex]);
  }

  /** A row for every key of this table, joined with the other's row or null. */
  leftJoin<VO, R>(other: Table<K, VO>, joiner: (key: K, value: V, otherValue: NoInfer<VO> | null) => R, opts?: JoinOptions<R>): Table<K, R> {
    return this.#next({ kind: 'tableTableJoin', mode: 'left', joiner: joiner as JoinerFn }, opts, asSerde(opts?.value), [other.nodeIndex]);
  }

  /** A row for every key either table has; the missing side is null. */
  outerJoin<VO, R>(other: Table<K, VO>, joiner: (key: K, value: V | null, otherValue: NoInfer<VO> | null) => R, opts?: JoinOptions<R>): Table<K, R> {
    return this.#next({ kind: 'tableTableJoin', mode: 'outer', joiner: joiner as JoinerFn }, opts, asSerde(opts?.value), [other.nodeIndex]);
  }
}

/** A table every worker holds whole (`builder.globalTable`); streams join it by a key they compute. */
export class GlobalTable<K, V> {
  /** @internal */
  constructor(
    readonly builder: TopologyBuilder,
    readonly nodeIndex: number,
    readonly keySerde: Serde<K>,
    readonly valueSerde: Serde<V>,
  ) {}
}

/** The windowing of the aggregate a table comes from, through the table stages that keep its keys. */
function upstreamWindow(builder: TopologyBuilder, index: number): WindowSpec | SessionWindowSpec | undefined {
  for (let node = builder.nodes[index]; node !== undefined; node = builder.nodes[node.parents[0] ?? -1]) {
    const spec = node.spec;
    if (spec.kind === 'aggregate') return spec.window ?? spec.session;
    if (spec.kind !== 'tableFilter' && spec.kind !== 'tableMapValues' && spec.kind !== 'suppress') return undefined;
  }
  return undefined;
}
