import type { Serde } from '../serdes/serde.ts';
import type { JoinerFn, KeyValueFn, NodeRecorder, StageSpec, ValueOnlyFn } from './nodes.ts';
import { JoinWindows } from './windows.ts';
import type { ProcessFn, ProcessorOptions, PunctuationSpec } from './processor.ts';
import type { HeadersUpdate, RecordContext } from './headers.ts';
import type {
  DeadLetterOptions,
  DedupeOptions,
  EffectContext,
  EffectOptions,
  GroupByKeyOptions,
  GroupByOptions,
  JoinOptions,
  StreamJoinOptions,
  StreamTableJoinOptions,
  ToTableOptions,
  KeySerdeOptions,
  KeyValue,
  KeyValueSerdeOptions,
  LatestByVersionOptions,
  NamedOptions,
  SinkOptions,
  ValueSerdeOptions,
} from './types.ts';
import { asSerde, type AnySerde } from './serde-typing.ts';
import { GlobalTable, Table } from './table.ts';
import { GroupedStream } from './grouped-streams.ts';

const NO_PROCESS = (): void => undefined;

/**
 * A record stream with keys K and values V. Every function given a record's key takes `(key, value)`
 * first, then any extra argument; `mapValues`, `flatMapValues` and `reduce` take values only.
 */
export class Stream<K, V> {
  /** @internal */
  constructor(
    readonly builder: NodeRecorder,
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
    const spec: StageSpec = { kind: 'toTable', ...(opts?.store !== undefined ? { store: opts.store } : {}), ...(opts?.versioned !== undefined ? { versioned: opts.versioned } : {}) };
    const index = this.builder.addNode(spec, [this.nodeIndex], opts?.name, key as AnySerde | undefined, value as AnySerde | undefined);
    return new Table<K, V>(this.builder, index, key, value);
  }

  /**
   * Joins each record with the table's row for its key as of that record (a table update alone emits
   * nothing); records without a row are dropped. Both inputs must be co-partitioned; a re-keyed
   * stream is repartitioned first.
   */
  join<T, R>(table: Table<K, T> | Table<K | null, T>, joiner: (key: K, value: V, tableValue: T) => R, opts?: StreamTableJoinOptions<R>): Stream<K, R>;
  /** Joins records of the two streams whose timestamps are within the window of each other. */
  join<VO, R>(other: Stream<K, VO>, joiner: (key: K, value: V, otherValue: VO) => R, windows: JoinWindows, opts?: StreamJoinOptions<K, V, VO, R>): Stream<K, R>;
  /** Joins each record with the global table's row for `keySelector(key, value)`; records without one are dropped. */
  join<GK, GV, R>(table: GlobalTable<GK, GV>, keySelector: (key: K, value: V) => GK, joiner: (key: K, value: V, tableValue: GV) => R, opts?: JoinOptions<R>): Stream<K, R>;
  join(other: Table<K | null, unknown> | Stream<K, unknown> | GlobalTable<unknown, unknown>, fn: unknown, third?: unknown, fourth?: unknown): Stream<K, unknown> {
    return this.#join('inner', other, fn, third, fourth);
  }

  /** As `join`, but a record without a row is joined with null. */
  leftJoin<T, R>(table: Table<K, T> | Table<K | null, T>, joiner: (key: K, value: V, tableValue: NoInfer<T> | null) => R, opts?: StreamTableJoinOptions<R>): Stream<K, R>;
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
    const opts = third as StreamTableJoinOptions<unknown> | undefined;
    const buffer = opts?.graceMs === undefined ? {} : { graceMs: opts.graceMs, ...(opts.store !== undefined ? { store: opts.store } : {}), ...(this.keySerde ? { keySerde: this.keySerde as AnySerde } : {}), ...(this.valueSerde ? { valueSerde: this.valueSerde as AnySerde } : {}) };
    const spec: StageSpec = { kind: 'streamTableJoin', mode: mode === 'outer' ? 'left' : mode, joiner: fn as JoinerFn, ...buffer };
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

// Table.toStream is defined here rather than in table.ts: a Stream makes Tables and a Table makes
// Streams, and the one of the two modules that knows both adds the conversion, or they would import
// each other. Every Table is made through a TopologyBuilder, whose module loads this one first.
declare module './table.ts' {
  interface Table<K, V> {
    toStream(opts?: NamedOptions): Stream<K, V>;
  }
}

Table.prototype.toStream = function toStream<K, V>(this: Table<K, V>, opts?: NamedOptions): Stream<K, V> {
  const index = this.builder.addNode({ kind: 'toStream' }, [this.nodeIndex], opts?.name, this.keySerde as AnySerde | undefined, this.valueSerde as AnySerde | undefined);
  return new Stream<K, V>(this.builder, index, this.keySerde, this.valueSerde);
};
