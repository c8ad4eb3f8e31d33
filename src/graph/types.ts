import type { Serde, SerdeContext } from '../serdes/serde.ts';
import type { Boundary, StageKind, StageSpec } from '../dsl/nodes.ts';
import type { RetryPolicy, WindowSpec } from '../dsl/types.ts';
import type { StoreKind } from '../state/store.ts';
import type { VersionedStoreSpec } from '../state/versioned.ts';
import type { SessionWindowSpec } from '../dsl/session-windows.ts';

export type TopicKind = 'source' | 'sink' | 'repartition' | 'changelog' | 'dead-letter';

/** A topic the application needs. The worker creates the internal ones (and the dead-letter topic). */
export interface TopicRequirement {
  readonly name: string;
  readonly kind: TopicKind;
  /** Owned by the application (named `<appId>-...`) and created by it. */
  readonly internal: boolean;
  readonly cleanupPolicy: 'delete' | 'compact';
  /** For internal topics: the topic configs they are created with (internal-topic-configs.ts). */
  readonly config?: Readonly<Record<string, string>>;
  /** Set by `resolvePartitions`; at compile time known only for a `stream.repartition({ partitions })` topic. */
  readonly partitions?: number;
  /**
   * For repartition topics: the sub-topology that reads them; for changelogs: the one that owns the
   * store. Their partition count is that sub-topology's task count.
   */
  readonly subtopology?: number;
}

export interface CompiledNode {
  readonly name: string;
  readonly kind: StageKind;
  readonly spec: StageSpec;
  readonly subtopology: number;
  readonly parents: readonly string[];
  readonly children: readonly string[];
  readonly boundary: Boundary;
  /** Human-readable EOS classification, as `describe` prints it. */
  readonly boundaryText: string;
  readonly stores: readonly string[];
  /** The topic a source reads or a sink writes. */
  readonly topic?: string;
  /** For sources: how records are decoded; for sinks: how they are encoded. */
  readonly keySerde?: Serde<unknown>;
  readonly valueSerde?: Serde<unknown>;
  /** For joins and table operations: the stages whose rows it reads by key, in parent order (tables only). */
  readonly tableInputs?: readonly string[];
  /** For a global-table join: the global table it looks rows up in. */
  readonly globalStore?: string;
}

/** The inputs of a join that must be co-partitioned: the same partition count, key encoding and partitioner. */
export interface CoPartitionGroup {
  readonly join: string;
  readonly subtopology: number;
  /** Source and repartition topics each side reads. */
  readonly topics: readonly string[];
}

/** A global table: read whole by every worker, outside the transaction, into a read-only store. */
export interface CompiledGlobalTable {
  readonly store: string;
  readonly node: string;
  readonly topic: string;
  readonly keySerde: Serde<unknown>;
  readonly valueSerde: Serde<unknown>;
}

export interface CompiledStore {
  readonly name: string;
  readonly kind: StoreKind;
  readonly node: string;
  readonly subtopology: number;
  readonly changelogTopic: string;
  /** Serde of the store's logical key: the record key (aggregates, version guard) or the id (dedupe). */
  readonly keySerde: Serde<unknown>;
  /** Serde of stored values: aggregate state, versions, first-seen times. */
  readonly valueSerde: Serde<unknown>;
  readonly window?: WindowSpec;
  /** Session stores: keys are `<key><start><end>`, as windowedSerde encodes `Windowed<K>`. */
  readonly session?: SessionWindowSpec;
  /**
   * The changelog is the table's own source topic (builder.table): nothing is written to it, and a
   * restore reads it up to the offset the group committed, which is where the store's state stands.
   */
  readonly sourceTopicChangelog?: boolean;
  /** A versioned table's store: each key's value is its version history (state/versioned.ts). */
  readonly versioned?: VersionedStoreSpec;
}

export interface CompiledSubtopology {
  readonly id: number;
  /** In topological order, sources first. */
  readonly nodes: readonly CompiledNode[];
  /** Every topic its tasks consume (external sources and repartition topics). */
  readonly sourceTopics: readonly string[];
  readonly stores: readonly string[];
}

/**
 * What a runtime task reads of a compiled topology. The runtime builds its tasks from this plan
 * (CompiledTopology is one) so that the compiler never depends on the engine that runs its output.
 */
export interface TaskPlan {
  readonly deadLetterTopic: string;
  readonly unknownErrors: 'permanent' | 'retriable';
  readonly subtopologies: readonly CompiledSubtopology[];
  readonly stores: ReadonlyMap<string, CompiledStore>;
  retryPolicyFor(node: string): RetryPolicy;
}

export interface SerdeUsage {
  readonly serde: Serde<unknown>;
  readonly ctx: SerdeContext;
}

export interface PartitionPlan {
  /** Every topic requirement with `partitions` filled in. */
  readonly topics: readonly TopicRequirement[];
  /** Number of tasks (= partitions) per sub-topology id. */
  readonly tasksPerSubtopology: ReadonlyMap<number, number>;
}

export interface CompileOptions {
  /** Overrides the builder's app id (the CLI's --app-id, worker tests with random names). */
  readonly appId?: string;
}

export type { RetryPolicy };
