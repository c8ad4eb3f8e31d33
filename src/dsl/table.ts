import type { Serde } from '../serdes/serde.ts';
import type { JoinerFn, KeyValueFn, NodeDef, NodeRecorder, StageSpec, ValueOnlyFn } from './nodes.ts';
import type { SessionWindowSpec } from './session-windows.ts';
import type { SuppressSpec } from './suppress.ts';
import type { RecordContext } from './headers.ts';
import type { JoinOptions, NamedOptions, ValueSerdeOptions, WindowSpec } from './types.ts';
import { asSerde, type AnySerde } from './serde-typing.ts';
import { recordForeignKeyJoin, type ForeignKeyJoinOptions } from './foreign-key-joins.ts';

/**
 * A changing table: the latest value per key. Built by `builder.table`, `stream.toTable`, an
 * aggregation or a table-table join; `toStream` turns every update into a record (a deleted row into
 * a null value; stream.ts defines it). `filter` and `mapValues` see live rows only.
 */
export class Table<K, V> {
  /** @internal */
  constructor(
    readonly builder: NodeRecorder,
    readonly nodeIndex: number,
    readonly keySerde: Serde<K> | undefined,
    readonly valueSerde: Serde<V> | undefined,
  ) {}

  #next<V2>(spec: StageSpec, opts: NamedOptions | undefined, value: Serde<V2> | undefined, extraParents: readonly number[] = []): Table<K, V2> {
    const index = this.builder.addNode(spec, [this.nodeIndex, ...extraParents], opts?.name, this.keySerde as AnySerde | undefined, value as AnySerde | undefined);
    return new Table<K, V2>(this.builder, index, this.keySerde, value);
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
    const window = upstreamWindow(this.builder.nodes, this.nodeIndex);
    const spec: StageSpec = { kind: 'suppress', suppress: suppressed, ...(window ? { window } : {}), ...(opts?.store !== undefined ? { store: opts.store } : {}) };
    return this.#next(spec, opts, this.valueSerde);
  }

  /** A row for every key both tables have; it changes when either side does. */
  join<VO, R>(other: Table<K, VO>, joiner: (key: K, value: V, otherValue: VO) => R, opts?: JoinOptions<R>): Table<K, R>;
  /**
   * Foreign-key join: a row for every row of this table whose `foreignKey(value)` is a key of the
   * other table (dsl/foreign-key-joins.ts); keyed by this table's key.
   */
  join<KO, VO, R>(other: Table<KO, VO>, foreignKey: (value: V) => KO | null, joiner: (key: K, value: V, otherValue: VO) => R, opts?: ForeignKeyJoinOptions<R>): Table<K, R>;
  join(other: Table<unknown, unknown>, second: unknown, third?: unknown, fourth?: unknown): Table<K, unknown> {
    return this.#join('inner', other, second, third, fourth);
  }

  /** A row for every key of this table, joined with the other's row or null. */
  leftJoin<VO, R>(other: Table<K, VO>, joiner: (key: K, value: V, otherValue: NoInfer<VO> | null) => R, opts?: JoinOptions<R>): Table<K, R>;
  /** Foreign-key left join: a row for every row of this table, joined with the other's row for its foreign key, or null. */
  leftJoin<KO, VO, R>(other: Table<KO, VO>, foreignKey: (value: V) => KO | null, joiner: (key: K, value: V, otherValue: NoInfer<VO> | null) => R, opts?: ForeignKeyJoinOptions<R>): Table<K, R>;
  leftJoin(other: Table<unknown, unknown>, second: unknown, third?: unknown, fourth?: unknown): Table<K, unknown> {
    return this.#join('left', other, second, third, fourth);
  }

  /** A joiner third means the second argument is a foreign-key extractor. */
  #join(mode: 'inner' | 'left', other: Table<unknown, unknown>, second: unknown, third: unknown, fourth: unknown): Table<K, unknown> {
    if (typeof third !== 'function') {
      const opts = third as JoinOptions<unknown> | undefined;
      return this.#next({ kind: 'tableTableJoin', mode, joiner: second as JoinerFn }, opts, asSerde(opts?.value), [other.nodeIndex]);
    }
    const opts = fourth as ForeignKeyJoinOptions<unknown> | undefined;
    const value = asSerde(opts?.value);
    const index = recordForeignKeyJoin(
      { builder: this.builder, left: this as Table<unknown, unknown>, right: other },
      {
        mode,
        foreignKey: second as ValueOnlyFn,
        joiner: third as JoinerFn,
        ...(opts?.name !== undefined ? { name: opts.name } : {}),
        ...(value ? { valueSerde: value } : {}),
        ...(opts?.store !== undefined ? { store: opts.store } : {}),
      },
    );
    return new Table<K, unknown>(this.builder, index, this.keySerde, value);
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
    readonly builder: NodeRecorder,
    readonly nodeIndex: number,
    readonly keySerde: Serde<K>,
    readonly valueSerde: Serde<V>,
  ) {}
}

/** The windowing of the aggregate a table comes from, through the table stages that keep its keys. */
function upstreamWindow(nodes: readonly NodeDef[], index: number): WindowSpec | SessionWindowSpec | undefined {
  for (let node = nodes[index]; node !== undefined; node = nodes[node.parents[0] ?? -1]) {
    const spec = node.spec;
    if (spec.kind === 'aggregate') return spec.window ?? spec.session;
    if (spec.kind === 'cogroup') return spec.window;
    if (spec.kind !== 'tableFilter' && spec.kind !== 'tableMapValues' && spec.kind !== 'suppress') return undefined;
  }
  return undefined;
}
