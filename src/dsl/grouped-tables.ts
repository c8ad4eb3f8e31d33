// Re-grouping a table (Kafka Streams' KTable.groupBy → KGroupedTable): each row belongs to one group
// at a time, so an update takes the row's previous value out of its old group's aggregate (the
// subtractor) and puts its new value into its new group's (the adder); a deleted row leaves its group.
import type { Serde } from '../serdes/serde.ts';
import type { NodeRecorder, StageSpec } from './nodes.ts';
import type { AggregateOptions, CountOptions, KeyValue, NamedOptions, ReduceOptions, TableGroupByOptions } from './types.ts';
import { countSerde } from '../state/internal-serdes.ts';
import { deletableSerde, tableChangeSerde, type TableChange } from '../state/table-change.ts';
import { asSerde, type AnySerde } from './serde-typing.ts';
import { Table } from './table.ts';

/** A group's aggregate before its first row, or after a subtractor returned null: none (the store has no row). */
const NONE = (): undefined => undefined;

/**
 * How one TableChange moves a group's aggregate, as Kafka Streams' KTableAggregate: the subtractor
 * first (only if the group has an aggregate), then the adder (from `init()` if it has none). The
 * result null deletes the group's row and sends a tombstone downstream.
 */
function changeFold(
  init: () => unknown,
  adder: (key: unknown, value: unknown, agg: unknown) => unknown,
  subtractor: (key: unknown, value: unknown, agg: unknown) => unknown,
): (key: unknown, change: unknown, agg: unknown) => unknown {
  return (key, change, agg) => {
    const { removed, added } = change as TableChange;
    let next: unknown = agg ?? undefined;
    if (removed !== undefined && next !== undefined) next = subtractor(key, removed, next) ?? undefined;
    if (added !== undefined) next = adder(key, added, next === undefined ? init() : next);
    return next ?? null;
  };
}

/** The result of `table.groupBy`: rows to be aggregated per group, after a repartition by the group's key. */
export class GroupedTable<K, V> {
  /** @internal */
  constructor(
    readonly builder: NodeRecorder,
    readonly nodeIndex: number,
    readonly keySerde: Serde<K>,
    readonly valueSerde: Serde<V>,
    readonly changeSerde: Serde<TableChange>,
  ) {}

  #aggregate<A>(mode: 'aggregate' | 'reduce' | 'count', fn: (key: unknown, change: unknown, agg: unknown) => unknown, calls: readonly ((...args: never[]) => unknown)[], state: Serde<A> | undefined, opts: (NamedOptions & { readonly store?: string }) | undefined): Table<K, A> {
    const spec: StageSpec = {
      kind: 'aggregate',
      mode,
      init: NONE,
      fn,
      calls,
      ...(state ? { stateSerde: deletableSerde(state) as AnySerde } : {}),
      groupKeySerde: this.keySerde as AnySerde,
      groupValueSerde: this.changeSerde as AnySerde,
      ...(opts?.store !== undefined ? { store: opts.store } : opts?.name !== undefined ? { store: opts.name } : {}),
    };
    const index = this.builder.addNode(spec, [this.nodeIndex], opts?.name, this.keySerde as AnySerde, state as AnySerde | undefined);
    return new Table<K, A>(this.builder, index, this.keySerde, state);
  }

  /**
   * `adder(key, value, aggregate)` puts a row's value into its group; `subtractor(key, value, aggregate)`
   * takes a row's previous value out of the group it leaves. A group whose last row left keeps what
   * the subtractor left (e.g. 0); a subtractor returning null deletes the group's row instead.
   */
  aggregate<A>(init: () => A, adder: (key: K, value: V, aggregate: A) => A, subtractor: (key: K, value: V, aggregate: A) => A | null, opts: AggregateOptions<A>): Table<K, A> {
    const add = adder as (k: unknown, v: unknown, a: unknown) => unknown;
    const subtract = subtractor as (k: unknown, v: unknown, a: unknown) => unknown;
    return this.#aggregate<A>('aggregate', changeFold(init, add, subtract), [init, add, subtract], asSerde(opts.state), opts);
  }

  /** As aggregate, with a group's first value as its aggregate: `adder(aggregate, value)`, `subtractor(aggregate, value)`. */
  reduce(adder: (aggregate: V, value: V) => V, subtractor: (aggregate: V, value: V) => V | null, opts?: ReduceOptions<V>): Table<K, V> {
    const add = adder as (a: unknown, v: unknown) => unknown;
    const subtract = subtractor as (a: unknown, v: unknown) => unknown;
    const fold = changeFold(
      NONE,
      (_k, v, a) => (a === undefined ? v : add(a, v)),
      (_k, v, a) => subtract(a, v),
    );
    return this.#aggregate<V>('reduce', fold, [add, subtract], asSerde(opts?.state) ?? this.valueSerde, opts);
  }

  /** Rows per group; a group whose rows all left counts 0 (it is not deleted), as in Kafka Streams. */
  count(opts?: CountOptions): Table<K, number> {
    const fold = changeFold(
      () => 0,
      (_k, _v, n) => (n as number) + 1,
      (_k, _v, n) => (n as number) - 1,
    );
    return this.#aggregate<number>('count', fold, [], countSerde, opts);
  }
}

// Table.groupBy is defined here rather than in table.ts, as Table.toStream is in stream.ts: a Table
// makes a GroupedTable and a GroupedTable makes Tables, and table.ts importing this module would close
// a cycle. topology-builder.ts, which makes every Table, loads this module.
declare module './table.ts' {
  interface Table<K, V> {
    /**
     * Re-groups the rows by `selector(key, value)` → [groupKey, groupValue] for `aggregate`, `reduce`
     * or `count` with an adder and a subtractor: a row that moves to another group leaves the old one,
     * a deleted row leaves its group. The re-grouping keeps the rows it placed in a store of its own,
     * so it knows each row's previous group whatever table it follows.
     */
    groupBy<KR, VR>(selector: (key: K, value: V) => KeyValue<KR, VR>, opts: TableGroupByOptions<KR, VR>): GroupedTable<KR, VR>;
  }
}

Table.prototype.groupBy = function groupBy<K, V, KR, VR>(this: Table<K, V>, selector: (key: K, value: V) => KeyValue<KR, VR>, opts: TableGroupByOptions<KR, VR>): GroupedTable<KR, VR> {
  const key = asSerde(opts.key) as Serde<KR>;
  const value = asSerde(opts.value) as Serde<VR>;
  const changes = tableChangeSerde(value as AnySerde);
  const spec: StageSpec = {
    kind: 'tableGroupBy',
    fn: selector as (key: unknown, value: unknown) => unknown,
    ...(this.keySerde ? { rowKeySerde: this.keySerde as AnySerde } : {}),
    ...(this.valueSerde ? { rowValueSerde: this.valueSerde as AnySerde } : {}),
    ...(opts.store !== undefined ? { store: opts.store } : {}),
  };
  const index = this.builder.addNode(spec, [this.nodeIndex], opts.name, key as AnySerde, changes as AnySerde);
  return new GroupedTable<KR, VR>(this.builder, index, key, value, changes);
};
