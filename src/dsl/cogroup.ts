// Cogrouping (Kafka Streams' KGroupedStream.cogroup → CogroupedKStream, KIP-150): several grouped
// streams with the same key fold into one aggregate, each through its own aggregator, in one store;
// instead of an aggregate per stream and joins of their tables.
import type { Serde } from '../serdes/serde.ts';
import type { StageSpec } from './nodes.ts';
import type { AggregateOptions, Windowed, WindowSpec } from './types.ts';
import { windowedSerde } from '../state/windowed.ts';
import { asSerde, type AnySerde } from './serde-typing.ts';
import { GroupedStream } from './grouped-streams.ts';
import { Table } from './table.ts';

type AnyAggregator = (key: unknown, value: unknown, aggregate: unknown) => unknown;

interface CogroupInput {
  readonly grouped: GroupedStream<unknown, unknown>;
  readonly aggregator: AnyAggregator;
}

function record<KO, A>(inputs: readonly CogroupInput[], init: () => A, window: WindowSpec | undefined, opts: AggregateOptions<A>): Table<KO, A> {
  const builder = inputs[0]!.grouped.builder;
  const state = asSerde(opts.state) as Serde<A>;
  const key = inputs.find((i) => i.grouped.keySerde !== undefined)?.grouped.keySerde;
  const spec: StageSpec = {
    kind: 'cogroup',
    init,
    aggregators: inputs.map((i) => i.aggregator),
    inputs: inputs.map(({ grouped }) => ({ ...(grouped.keySerde ? { keySerde: grouped.keySerde } : {}), ...(grouped.valueSerde ? { valueSerde: grouped.valueSerde } : {}) })),
    stateSerde: state as AnySerde,
    ...(window ? { window } : {}),
    ...(opts.store !== undefined ? { store: opts.store } : opts.name !== undefined ? { store: opts.name } : {}),
  };
  const outKey = (window && key ? windowedSerde(key) : key) as AnySerde | undefined;
  const index = builder.addNode(spec, inputs.map((i) => i.grouped.nodeIndex), opts.name, outKey, state as AnySerde);
  return new Table<KO, A>(builder, index, outKey as Serde<KO> | undefined, state);
}

/** Grouped streams with one key type K being folded into one aggregate A (`groupedStream.cogroup(aggregator)`). */
export class CogroupedStream<K, A> {
  /** @internal */
  constructor(readonly inputs: readonly CogroupInput[]) {}

  /** Adds another grouped stream with the same key; `aggregator(key, value, aggregate)` folds its records in. */
  cogroup<V>(grouped: GroupedStream<K, V> | GroupedStream<K | null, V>, aggregator: (key: K, value: V, aggregate: A) => A): CogroupedStream<K, A> {
    return new CogroupedStream<K, A>([...this.inputs, { grouped: grouped as GroupedStream<unknown, unknown>, aggregator: aggregator as AnyAggregator }]);
  }

  /** The aggregate per key over all the streams, starting from `init()`; one store, named by `store` or `name`. */
  aggregate(init: () => A, opts: AggregateOptions<A>): Table<K, A> {
    return record<K, A>(this.inputs, init, undefined, opts);
  }

  /** The same per key and tumbling or hopping window. */
  windowedBy(window: WindowSpec): WindowedCogroupedStream<K, A> {
    return new WindowedCogroupedStream<K, A>(this.inputs, window);
  }
}

export class WindowedCogroupedStream<K, A> {
  /** @internal */
  constructor(
    readonly inputs: readonly CogroupInput[],
    readonly window: WindowSpec,
  ) {}

  aggregate(init: () => A, opts: AggregateOptions<A>): Table<Windowed<K>, A> {
    return record<Windowed<K>, A>(this.inputs, init, this.window, opts);
  }
}

declare module './grouped-streams.ts' {
  interface GroupedStream<K, V> {
    /**
     * Starts a cogroup: this stream's records fold into the aggregate through `aggregator(key, value,
     * aggregate)`; add other grouped streams with `.cogroup(grouped, aggregator)`, then `aggregate(init, opts)`.
     */
    cogroup<A>(aggregator: (key: K, value: V, aggregate: A) => A): CogroupedStream<K, A>;
  }
}

GroupedStream.prototype.cogroup = function cogroup<K, V, A>(this: GroupedStream<K, V>, aggregator: (key: K, value: V, aggregate: A) => A): CogroupedStream<K, A> {
  return new CogroupedStream<K, A>([{ grouped: this as GroupedStream<unknown, unknown>, aggregator: aggregator as AnyAggregator }]);
};
