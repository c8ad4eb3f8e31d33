import type { Serde } from '../serdes/serde.ts';
import type { NodeRecorder, StageSpec } from './nodes.ts';
import { SessionWindows, type SessionWindowSpec } from './session-windows.ts';
import type { AggregateOptions, CountOptions, NamedOptions, ReduceOptions, Windowed, WindowSpec } from './types.ts';
import { windowedSerde } from '../state/windowed.ts';
import { countSerde } from '../state/internal-serdes.ts';
import { asSerde, type AnySerde } from './serde-typing.ts';
import { Table } from './table.ts';

const COUNT_INIT = (): number => 0;
const COUNT_FN = (_k: unknown, _v: unknown, agg: unknown): number => (agg as number) + 1;
const NO_INIT = (): undefined => undefined;
const SUM_COUNTS = (_k: unknown, a: unknown, b: unknown): number => (a as number) + (b as number);

/** Shared by grouped and windowed-grouped streams: records the aggregate node. */
abstract class Grouping<K, V> {
  /** @internal */
  constructor(
    readonly builder: NodeRecorder,
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
  constructor(builder: NodeRecorder, nodeIndex: number, keySerde: Serde<K> | undefined, valueSerde: Serde<V> | undefined) {
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
  constructor(builder: NodeRecorder, nodeIndex: number, keySerde: Serde<K> | undefined, valueSerde: Serde<V> | undefined, window: SessionWindowSpec) {
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
  constructor(builder: NodeRecorder, nodeIndex: number, keySerde: Serde<K> | undefined, valueSerde: Serde<V> | undefined, window: WindowSpec) {
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

