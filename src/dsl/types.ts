import type { Serde } from '../serdes/serde.ts';
import type { RecordHeaders } from './headers.ts';

/** A key/value pair as `map` and `flatMap` return it. */
export type KeyValue<K, V> = readonly [key: K, value: V];

// Part of the DSL's API; defined in src/core because state/ encodes these keys too.
export type { Windowed } from '../core/windowed.ts';

/** Retry policy for stages that throw `RetriableError`. */
export interface RetryPolicy {
  readonly maxAttempts: number;
  readonly initialBackoffMs: number;
  readonly maxBackoffMs: number;
}

export const DEFAULT_RETRY_POLICY: RetryPolicy = Object.freeze({ maxAttempts: 3, initialBackoffMs: 100, maxBackoffMs: 2000 });

/**
 * Tumbling and hopping windows on event time. A window `[start, start + sizeMs)` closes once
 * stream time reaches `start + sizeMs + graceMs`; records for closed windows are late. A sliding
 * window (sliding-windows.ts) is `[start, start + sizeMs]`, both ends included, and closes once
 * stream time passes `start + sizeMs + graceMs`.
 */
export interface WindowSpec {
  readonly type: 'tumbling' | 'hopping' | 'sliding';
  readonly sizeMs: number;
  readonly advanceMs: number;
  readonly graceMs: number;
  /** Emit only the final result of each window, when it closes (suppress), instead of every update. */
  readonly emitFinal: boolean;
  /** What happens to records that arrive after their windows closed. They are always counted. */
  readonly lateRecords: 'drop' | 'dead-letter';
}

/**
 * A serde for values of type T. The stock string serde is `Serde<string | null>` (Kafka keys and values may be
 * null), and it must be usable where a stage produces `string`.
 */
export type SerdeFor<T> = Serde<NoInfer<T>> | Serde<NoInfer<T> | null>;

export interface NamedOptions {
  /** Overrides the generated node name; it must be unique within the topology. */
  readonly name?: string;
}

export interface SourceOptions<K, V> extends NamedOptions {
  /** Without a key serde the stream is keyless (`K = null`) and must be re-keyed before a stateful stage. */
  readonly key?: Serde<K>;
  readonly value: Serde<V>;
  /** Event time of a record; defaults to the Kafka record timestamp. */
  readonly timestamp?: (key: K, value: V, recordTimestamp: number) => number;
}

export interface SinkOptions<K, V> extends NamedOptions {
  /** Defaults to the serde the stream is known to carry; compile fails with MISSING_SERDE if there is none. */
  readonly key?: SerdeFor<K>;
  readonly value?: SerdeFor<V>;
}

export interface EffectContext<K> {
  /** Same on every replay of the same input: from the user's key function, else `${topic}-${partition}-${offset}`. */
  readonly idempotencyKey: string;
  readonly key: K;
  readonly topic: string;
  readonly partition: number;
  readonly offset: number;
  readonly timestamp: number;
  /** 1 on the first try, 2 on the first retry, ... */
  readonly attempt: number;
  /** The record's headers at this stage (onceflow's lineage header excluded). */
  readonly headers: RecordHeaders;
  /** With tracing on, this call's span as a W3C `traceparent`, for the external service to continue the trace (an HTTP header); undefined when off. */
  readonly traceparent?: string | undefined;
}

export interface EffectOptions<K, V> {
  readonly idempotencyKey?: (key: K, value: V) => string;
  readonly retry?: Partial<RetryPolicy>;
}

export interface AggregateOptions<A> extends NamedOptions {
  readonly state: SerdeFor<A>;
  /** Store name (defaults to `name`, else derived from the node name). */
  readonly store?: string;
}

export interface ReduceOptions<V> extends NamedOptions {
  /** Defaults to the value serde the stream carries. */
  readonly state?: SerdeFor<V>;
  readonly store?: string;
}

export interface CountOptions extends NamedOptions {
  readonly store?: string;
}

export interface DedupeOptions extends NamedOptions {
  /** How long an id is remembered, in stream time since it was first seen. */
  readonly ttlMs: number;
  readonly store?: string;
}

export interface LatestByVersionOptions extends NamedOptions {
  readonly store?: string;
}

export interface GroupByKeyOptions<K, V> {
  readonly key?: SerdeFor<K>;
  readonly value?: SerdeFor<V>;
}

export interface GroupByOptions<K, V> extends NamedOptions {
  readonly key: SerdeFor<K>;
  /** Needed when the repartition topic must carry values whose serde the stream lost (after mapValues etc.). */
  readonly value?: SerdeFor<V>;
}

export interface TableGroupByOptions<K, V> extends NamedOptions {
  /** Serdes of the groups' keys and values: the repartition topic carries them. */
  readonly key: SerdeFor<K>;
  readonly value: SerdeFor<V>;
  /** The store of the rows the re-grouping has placed (defaults to `name`, else derived from the node name). */
  readonly store?: string;
}

export interface ValueSerdeOptions<V> extends NamedOptions {
  readonly value?: SerdeFor<V>;
}

export interface KeySerdeOptions<K> extends NamedOptions {
  readonly key?: SerdeFor<K>;
}

export interface KeyValueSerdeOptions<K, V> extends NamedOptions {
  readonly key?: SerdeFor<K>;
  readonly value?: SerdeFor<V>;
}

export interface DeadLetterOptions extends NamedOptions {
  /** Goes into the `onceflow.error.message` header. */
  readonly reason?: string;
}

export interface TopologyOptions {
  readonly appId: string;
  /** Defaults to `<appId>-dlq`. */
  readonly deadLetterTopic?: string;
  readonly retry?: Partial<RetryPolicy>;
  /** How errors that are neither RetriableError nor PermanentError are treated. */
  readonly unknownErrors?: 'permanent' | 'retriable';
  /** The file the topology was defined in, used in validation messages (set by loadTopology). */
  readonly sourceFile?: string;
}

export interface TableSourceOptions<K, V> extends NamedOptions {
  readonly key: Serde<K>;
  /** Decodes the rows; a null record value is a tombstone (the row is deleted) and never reaches it. */
  readonly value: Serde<V>;
  /** Store name (defaults to `name`, else derived from the node name). */
  readonly store?: string;
  /** Keep each key's past values too (see VersionedTableOptions). */
  readonly versioned?: VersionedTableOptions;
}

export interface ToTableOptions<K, V> extends NamedOptions {
  /** Default: the serdes the stream carries; the table's store needs both. */
  readonly key?: SerdeFor<K>;
  readonly value?: SerdeFor<V>;
  readonly store?: string;
  /** Keep each key's past values too (see VersionedTableOptions). */
  readonly versioned?: VersionedTableOptions;
}

/**
 * A versioned table (Kafka Streams' versioned store, KIP-889/914) keeps, per key, every value it had
 * within `historyRetentionMs` of stream time. A stream joined with it is joined with the row valid at
 * each stream record's timestamp, not the latest; an update older than the key's latest goes into
 * the history without changing the table.
 */
export interface VersionedTableOptions {
  readonly historyRetentionMs: number;
}

export interface JoinOptions<R> extends NamedOptions {
  /** Serde of the joined values, for a sink or a stateful stage after the join. */
  readonly value?: SerdeFor<R>;
}

/** A stream joined with a table. */
export interface StreamTableJoinOptions<R> extends JoinOptions<R> {
  /**
   * A versioned table only (KIP-923): each stream record waits until stream time is `graceMs` past its
   * timestamp, so that table updates arriving a little late are in the table's history when it joins;
   * the waiting records are joined in timestamp order. A record already that late joins at once.
   * At most the table's historyRetentionMs.
   */
  readonly graceMs?: number;
  /** Name of the store the waiting records are kept in (changelogged); defaults to `<join name>-buffer`. */
  readonly store?: string;
}

export interface StreamJoinOptions<K, V, VO, R> extends JoinOptions<R> {
  /** Serdes the join's window stores keep each side's records in; default: those the streams carry. */
  readonly key?: SerdeFor<K>;
  readonly thisValue?: SerdeFor<V>;
  readonly otherValue?: SerdeFor<VO>;
  /** Prefix of the two window stores' names (`<store>-this`, `<store>-other`); defaults to the join's name. */
  readonly store?: string;
}
