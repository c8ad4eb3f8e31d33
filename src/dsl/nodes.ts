import type { Serde } from '../serdes/serde.ts';
import type { EffectContext, RetryPolicy, WindowSpec } from './types.ts';
import type { SessionWindowSpec } from './session-windows.ts';
import type { SuppressSpec } from './suppress.ts';
import type { PunctuationSpec, ProcessFn } from './processor.ts';
import type { RecordContext } from './headers.ts';
import type { VersionedStoreSpec } from '../state/versioned.ts';

/**
 * The graph the DSL records. Stage functions are stored with `unknown` parameters: the fluent
 * API is where their types are checked, and the engine only passes values along.
 */
export type StageKind =
  | 'source'
  | 'foreach'
  | 'filter'
  | 'map'
  | 'mapValues'
  | 'flatMap'
  | 'flatMapValues'
  | 'selectKey'
  | 'groupBy'
  | 'branch'
  | 'branchChild'
  | 'merge'
  | 'peek'
  | 'setHeaders'
  | 'dedupe'
  | 'latestByVersion'
  | 'aggregate'
  | 'toStream'
  | 'sink'
  | 'deadLetter'
  | 'effect'
  | 'repartitionSink'
  | 'repartitionSource'
  | 'toTable'
  | 'tableFilter'
  | 'tableMapValues'
  | 'tableGroupBy'
  | 'streamTableJoin'
  | 'tableTableJoin'
  | 'streamStreamJoin'
  | 'globalTable'
  | 'globalTableJoin'
  | 'suppress'
  | 'process'
  | 'repartition'
  | 'cogroup'
  | 'fkSubscribe'
  | 'fkSubscriptionJoin'
  | 'fkResponseJoin';

export type Boundary = 'transactional' | 'external';

export interface StageKindInfo {
  /** Used in generated names: KSTREAM-<label>-0000000003. */
  readonly label: string;
  /** Whether the stage's effects commit with the Kafka transaction or happen outside it. */
  readonly boundary: Boundary;
  readonly role: 'source' | 'processor' | 'sink';
  /** Changes the record key, so a later stateful stage must repartition. */
  readonly changesKey: boolean;
  /**
   * Keeps nothing across records and touches nothing outside its record: a sub-topology made of such
   * stages only may run on the processing thread (runtime/offload/).
   */
  readonly threadSafe: boolean;
  /**
   * Needs nothing only the main thread has (the Kafka clients and pools of effects, the global tables,
   * wall-clock punctuation): a stateful sub-topology made of such stages may have its tasks hosted,
   * stores and all, on a processing thread (runtime/offload/thread-task.ts).
   */
  readonly hostable: boolean;
}

export const STAGE_KINDS: Readonly<Record<StageKind, StageKindInfo>> = {
  source: { label: 'SOURCE', boundary: 'transactional', role: 'source', changesKey: false, threadSafe: true, hostable: true },
  foreach: { label: 'FOREACH', boundary: 'transactional', role: 'processor', changesKey: false, threadSafe: true, hostable: true },
  filter: { label: 'FILTER', boundary: 'transactional', role: 'processor', changesKey: false, threadSafe: true, hostable: true },
  map: { label: 'MAP', boundary: 'transactional', role: 'processor', changesKey: true, threadSafe: true, hostable: true },
  mapValues: { label: 'MAPVALUES', boundary: 'transactional', role: 'processor', changesKey: false, threadSafe: true, hostable: true },
  flatMap: { label: 'FLATMAP', boundary: 'transactional', role: 'processor', changesKey: true, threadSafe: true, hostable: true },
  flatMapValues: { label: 'FLATMAPVALUES', boundary: 'transactional', role: 'processor', changesKey: false, threadSafe: true, hostable: true },
  selectKey: { label: 'KEY-SELECT', boundary: 'transactional', role: 'processor', changesKey: true, threadSafe: true, hostable: true },
  groupBy: { label: 'GROUPBY', boundary: 'transactional', role: 'processor', changesKey: true, threadSafe: true, hostable: true },
  branch: { label: 'BRANCH', boundary: 'transactional', role: 'processor', changesKey: false, threadSafe: true, hostable: true },
  branchChild: { label: 'BRANCHCHILD', boundary: 'transactional', role: 'processor', changesKey: false, threadSafe: true, hostable: true },
  merge: { label: 'MERGE', boundary: 'transactional', role: 'processor', changesKey: false, threadSafe: true, hostable: true },
  peek: { label: 'PEEK', boundary: 'transactional', role: 'processor', changesKey: false, threadSafe: true, hostable: true },
  setHeaders: { label: 'SET-HEADERS', boundary: 'transactional', role: 'processor', changesKey: false, threadSafe: true, hostable: true },
  dedupe: { label: 'DEDUPE', boundary: 'transactional', role: 'processor', changesKey: false, threadSafe: false, hostable: true },
  latestByVersion: { label: 'LATEST-BY-VERSION', boundary: 'transactional', role: 'processor', changesKey: false, threadSafe: false, hostable: true },
  aggregate: { label: 'AGGREGATE', boundary: 'transactional', role: 'processor', changesKey: false, threadSafe: false, hostable: true },
  toStream: { label: 'TOSTREAM', boundary: 'transactional', role: 'processor', changesKey: false, threadSafe: false, hostable: true },
  sink: { label: 'SINK', boundary: 'transactional', role: 'sink', changesKey: false, threadSafe: true, hostable: true },
  deadLetter: { label: 'DEADLETTER', boundary: 'transactional', role: 'sink', changesKey: false, threadSafe: true, hostable: true },
  effect: { label: 'EFFECT', boundary: 'external', role: 'processor', changesKey: false, threadSafe: false, hostable: false },
  repartitionSink: { label: 'SINK', boundary: 'transactional', role: 'sink', changesKey: false, threadSafe: true, hostable: true },
  repartitionSource: { label: 'SOURCE', boundary: 'transactional', role: 'source', changesKey: false, threadSafe: true, hostable: true },
  toTable: { label: 'TOTABLE', boundary: 'transactional', role: 'processor', changesKey: false, threadSafe: false, hostable: true },
  tableFilter: { label: 'FILTER', boundary: 'transactional', role: 'processor', changesKey: false, threadSafe: false, hostable: true },
  tableMapValues: { label: 'MAPVALUES', boundary: 'transactional', role: 'processor', changesKey: false, threadSafe: false, hostable: true },
  tableGroupBy: { label: 'SELECT', boundary: 'transactional', role: 'processor', changesKey: true, threadSafe: false, hostable: true },
  streamTableJoin: { label: 'JOIN', boundary: 'transactional', role: 'processor', changesKey: false, threadSafe: false, hostable: true },
  tableTableJoin: { label: 'JOIN', boundary: 'transactional', role: 'processor', changesKey: false, threadSafe: false, hostable: true },
  streamStreamJoin: { label: 'JOIN', boundary: 'transactional', role: 'processor', changesKey: false, threadSafe: false, hostable: true },
  globalTable: { label: 'GLOBALTABLE', boundary: 'transactional', role: 'source', changesKey: false, threadSafe: false, hostable: false },
  globalTableJoin: { label: 'JOIN', boundary: 'transactional', role: 'processor', changesKey: false, threadSafe: false, hostable: false },
  suppress: { label: 'SUPPRESS', boundary: 'transactional', role: 'processor', changesKey: false, threadSafe: false, hostable: true },
  process: { label: 'PROCESSOR', boundary: 'transactional', role: 'processor', changesKey: true, threadSafe: false, hostable: false },
  repartition: { label: 'REPARTITION', boundary: 'transactional', role: 'processor', changesKey: false, threadSafe: true, hostable: true },
  cogroup: { label: 'COGROUP', boundary: 'transactional', role: 'processor', changesKey: false, threadSafe: false, hostable: true },
  // A foreign-key table join is three stages (dsl/foreign-key-joins.ts): Kafka Streams' names.
  fkSubscribe: { label: 'FK-JOIN-SUBSCRIPTION-REGISTRATION', boundary: 'transactional', role: 'processor', changesKey: true, threadSafe: false, hostable: true },
  fkSubscriptionJoin: { label: 'FK-JOIN-SUBSCRIPTION-PROCESSOR', boundary: 'transactional', role: 'processor', changesKey: true, threadSafe: false, hostable: true },
  fkResponseJoin: { label: 'FK-JOIN-OUTPUT', boundary: 'transactional', role: 'processor', changesKey: false, threadSafe: false, hostable: true },
};

/**
 * One argument order for every stage, Kafka Streams' (key, value, ...extra): while filter took
 * (value, key) and groupBy (key, value), the README's `filter((_k, o) => o.status === 'PAID')` read
 * the key as the order and, run unchecked by tsx, dropped every record. mapValues and flatMapValues
 * see the value only. Stateless stages also pass the record context (headers) last; functions that do
 * not declare it never make it decode anything.
 */
export type KeyValueFn = (key: unknown, value: unknown, ctx?: RecordContext) => unknown;
export type ValueOnlyFn = (value: unknown, ctx?: RecordContext) => unknown;
/** A join's `(key, value, otherValue)`: the key first, as everywhere; a missing side is null. */
export type JoinerFn = (key: unknown, value: unknown, other: unknown) => unknown;

/** inner: both sides needed; left: every left record/row; outer: every record/row of either side. */
export type JoinMode = 'inner' | 'left' | 'outer';

/** A stream-stream join's window: the other side's records within [ts - beforeMs, ts + afterMs] match. */
export interface JoinWindowSpec {
  readonly beforeMs: number;
  readonly afterMs: number;
  readonly graceMs: number;
}

export type StageSpec =
  | {
      readonly kind: 'source';
      readonly topic: string;
      readonly timestamp?: (key: unknown, value: unknown, ts: number) => number;
      /** Feeds a table: a null value is a tombstone, passed on as null instead of decoded. */
      readonly table?: boolean;
    }
  | { readonly kind: 'filter'; readonly fn: KeyValueFn; readonly negate: boolean }
  | { readonly kind: 'foreach'; readonly fn: KeyValueFn }
  | { readonly kind: 'map'; readonly fn: KeyValueFn }
  | { readonly kind: 'mapValues'; readonly fn: ValueOnlyFn }
  | { readonly kind: 'flatMap'; readonly fn: KeyValueFn }
  | { readonly kind: 'flatMapValues'; readonly fn: ValueOnlyFn }
  | { readonly kind: 'selectKey'; readonly fn: KeyValueFn }
  | { readonly kind: 'groupBy'; readonly fn: KeyValueFn }
  | { readonly kind: 'branch'; readonly branches: readonly { readonly name: string; readonly fn: KeyValueFn }[] }
  | { readonly kind: 'branchChild'; readonly branch: string }
  | { readonly kind: 'merge' }
  | { readonly kind: 'peek'; readonly fn: KeyValueFn }
  /** `fn(key, value, ctx)` gives the headers everything downstream of it carries (a RecordHeaders or name → value). */
  | { readonly kind: 'setHeaders'; readonly fn: KeyValueFn }
  | { readonly kind: 'dedupe'; readonly fn: KeyValueFn; readonly ttlMs: number; readonly store?: string }
  | { readonly kind: 'latestByVersion'; readonly fn: KeyValueFn; readonly store?: string }
  | {
      readonly kind: 'aggregate';
      readonly mode: 'aggregate' | 'reduce' | 'count';
      readonly init: () => unknown;
      /** (key, value, aggregate) => aggregate; for reduce the aggregate starts as the first value. */
      readonly fn: (key: unknown, value: unknown, agg: unknown) => unknown;
      readonly stateSerde?: Serde<unknown>;
      readonly window?: WindowSpec;
      /** Session windows instead of `window`; `merger` then combines the aggregates of two sessions a record bridges. */
      readonly session?: SessionWindowSpec;
      readonly merger?: (key: unknown, left: unknown, right: unknown) => unknown;
      readonly store?: string;
      /** Serdes of the grouped input (groupByKey may override the stream's), for the repartition topic. */
      readonly groupKeySerde?: Serde<unknown>;
      readonly groupValueSerde?: Serde<unknown>;
      /** The user's functions `fn` calls (a re-grouped table's adder and subtractor), so that compile refuses async ones. */
      readonly calls?: readonly ((...args: never[]) => unknown)[];
    }
  | { readonly kind: 'toStream' }
  /** `versioned`: the store keeps each key's history (state/versioned.ts), and stream-table joins read the version valid at the stream record's timestamp. */
  | { readonly kind: 'toTable'; readonly store?: string; readonly versioned?: VersionedStoreSpec }
  | { readonly kind: 'tableFilter'; readonly fn: KeyValueFn; readonly negate: boolean }
  | { readonly kind: 'tableMapValues'; readonly fn: ValueOnlyFn }
  /**
   * `table.groupBy(selector)`: `fn(key, value)` gives a row's group as [groupKey, groupValue]. Each
   * update sends a TableChange (state/table-change.ts) to the old and the new group; the stage keeps
   * the rows it grouped (keyed and encoded with the table's serdes) to know a row's previous group.
   */
  | { readonly kind: 'tableGroupBy'; readonly fn: KeyValueFn; readonly rowKeySerde?: Serde<unknown>; readonly rowValueSerde?: Serde<unknown>; readonly store?: string }
  /** The second parent is the table; its updates alone emit nothing. */
  /**
   * `graceMs` (Kafka Streams' KIP-923, a versioned table only): stream records wait in a buffer store until
   * stream time passes their timestamp + grace, then join in timestamp order; `keySerde` / `valueSerde` are the buffer's.
   */
  | {
      readonly kind: 'streamTableJoin';
      readonly mode: 'inner' | 'left';
      readonly joiner: JoinerFn;
      readonly graceMs?: number;
      readonly store?: string;
      readonly keySerde?: Serde<unknown>;
      readonly valueSerde?: Serde<unknown>;
    }
  | { readonly kind: 'tableTableJoin'; readonly mode: JoinMode; readonly joiner: JoinerFn }
  | {
      readonly kind: 'streamStreamJoin';
      readonly mode: JoinMode;
      readonly joiner: JoinerFn;
      readonly window: JoinWindowSpec;
      /** Serdes the window stores keep each side's records in. */
      readonly keySerde?: Serde<unknown>;
      readonly thisValueSerde?: Serde<unknown>;
      readonly otherValueSerde?: Serde<unknown>;
      readonly store?: string;
    }
  | { readonly kind: 'globalTable'; readonly topic: string; readonly store?: string }
  /** The second parent is the global table, looked up by `keySelector(key, value)`. */
  | { readonly kind: 'globalTableJoin'; readonly mode: 'inner' | 'left'; readonly keySelector: KeyValueFn; readonly joiner: JoinerFn }
  /** Holds back updates of a table; `window` is the windowing of the aggregate upstream, when there is one. */
  | { readonly kind: 'suppress'; readonly suppress: SuppressSpec; readonly window?: WindowSpec | SessionWindowSpec; readonly store?: string }
  | {
      readonly kind: 'process';
      readonly fn: ProcessFn;
      readonly punctuations: readonly PunctuationSpec[];
      /** The processor's own key-value store, when it keeps state. */
      readonly state?: { readonly keySerde: Serde<unknown>; readonly valueSerde: Serde<unknown>; readonly store?: string };
    }
  | ForeignKeyJoinSpec
  | { readonly kind: 'sink'; readonly topic: string }
  | { readonly kind: 'deadLetter'; readonly reason?: string }
  | {
      readonly kind: 'effect';
      readonly fn: (key: unknown, value: unknown, ctx: EffectContext<unknown>) => Promise<unknown>;
      readonly idempotencyKey?: KeyValueFn;
      readonly retry?: Partial<RetryPolicy>;
    }
  /** `stream.repartition()`: through `<appId>-<name>-repartition`, with `partitions` of its own when given. */
  | { readonly kind: 'repartition'; readonly partitions?: number }
  /**
   * `cogroup(...).aggregate(init)`: one aggregate over several grouped streams, one store; the i-th
   * parent's records go through `aggregators[i]`. `inputs[i]` are the serdes of its repartition topic.
   */
  | {
      readonly kind: 'cogroup';
      readonly init: () => unknown;
      readonly aggregators: readonly ((key: unknown, value: unknown, agg: unknown) => unknown)[];
      readonly inputs: readonly { readonly keySerde?: Serde<unknown>; readonly valueSerde?: Serde<unknown> }[];
      readonly stateSerde?: Serde<unknown>;
      readonly window?: WindowSpec;
      readonly store?: string;
    };

/** One node as the builder recorded it; `index` is the creation order, which is also a topological order. */
export interface NodeDef {
  readonly index: number;
  readonly spec: StageSpec;
  readonly parents: readonly number[];
  readonly userName?: string;
  /** Serdes of the records leaving this node, when known. */
  readonly keySerde?: Serde<unknown>;
  readonly valueSerde?: Serde<unknown>;
}

/**
 * What a stream or table handle needs of the builder that made it: the nodes so far, and a way to append
 * one. Typed apart from TopologyBuilder, which makes the handles, so that their modules need not import it.
 */
export interface NodeRecorder {
  readonly nodes: readonly NodeDef[];
  addNode(spec: StageSpec, parents: readonly number[], userName: string | undefined, keySerde: Serde<unknown> | undefined, valueSerde: Serde<unknown> | undefined): number;
}

/**
 * The three stages of a foreign-key table join, all named from `base` (their stores and topics).
 * `fkSubscribe` (after the left table) sends each left row's subscription, keyed by its foreign key,
 * and keeps the foreign key it last sent per left key; `fkSubscriptionJoin` (beside the right table)
 * keeps the subscriptions per foreign key and answers them, and each right update, keyed by the left
 * key; `fkResponseJoin` (beside the left table) joins an answer with the left row it was sent for.
 */
export type ForeignKeyJoinSpec =
  | {
      readonly kind: 'fkSubscribe';
      readonly mode: 'inner' | 'left';
      readonly base: string;
      readonly foreignKey: ValueOnlyFn;
      readonly leftKeySerde?: Serde<unknown>;
      readonly leftValueSerde?: Serde<unknown>;
      readonly foreignKeySerde?: Serde<unknown>;
    }
  | {
      readonly kind: 'fkSubscriptionJoin';
      readonly base: string;
      readonly leftKeySerde?: Serde<unknown>;
      /** Prepared (a registry serde's schema registered) where the join hashes left values: both its ends use it. */
      readonly leftValueSerde?: Serde<unknown>;
      readonly foreignKeySerde?: Serde<unknown>;
      readonly rightValueSerde?: Serde<unknown>;
    }
  | {
      readonly kind: 'fkResponseJoin';
      readonly mode: 'inner' | 'left';
      readonly base: string;
      readonly foreignKey: ValueOnlyFn;
      readonly joiner: JoinerFn;
      readonly leftKeySerde?: Serde<unknown>;
      readonly leftValueSerde?: Serde<unknown>;
      readonly rightValueSerde?: Serde<unknown>;
    };
