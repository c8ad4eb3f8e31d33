import type { Serde, SerdeContext } from '../../serdes/serde.ts';
import type { CommitCollector, IncomingRecord, RecordCollector } from '../../core/records.ts';
import type { StoreFactory } from '../../state/store.ts';
import type { CompiledGlobalTable, CompiledStore, TaskPlan } from '../../graph/types.ts';
import type { StoreReader } from '../../state/queries.ts';
import { fingerprintOf, type TopologyFingerprint } from '../../graph/fingerprint.ts';
import type { TaskMetrics } from '../nodes/task-state.ts';
import { createTask } from './task.ts';
import type { TaskOptions } from './task-options.ts';
import type { RestoreRejection } from './table-source-restore.ts';

/**
 * What the worker needs of a compiled topology; `runtimeTopology` makes one of the compiler's output.
 * Keeping the worker on this narrow view means the runtime never reaches into the DSL's node graph.
 */
export interface RuntimeTopology {
  readonly appId: string;
  readonly subtopologies: readonly { readonly id: number; readonly sourceTopics: readonly string[] }[];
  readonly topics: readonly RuntimeTopic[];
  /** Joins whose inputs must be co-partitioned; the worker then assigns partitions so that their tasks see both sides. */
  readonly copartitionGroups?: readonly { readonly join: string; readonly topics: readonly string[] }[];
  /** Global tables every worker reads whole, outside the transaction. */
  readonly globalTables?: readonly CompiledGlobalTable[];
  /** The stores of the tasks, by name, for interactive queries. */
  readonly stores?: ReadonlyMap<string, CompiledStore>;
  serdeUsages(): readonly { readonly serde: Serde<unknown>; readonly ctx: SerdeContext }[];
  createTask(subtopologyId: number, partition: number, opts?: { readonly storeFactory?: StoreFactory; readonly initialStreamTime?: number; readonly cache?: TaskOptions['cache']; readonly recordLimits?: TaskOptions['recordLimits']; readonly globalRows?: TaskOptions['globalRows'] }): RuntimeTask;
  /** Partition counts of every topic, internal ones derived from the external sources' counts. */
  resolvePartitions(sourcePartitions: ReadonlyMap<string, number>): { readonly topics: readonly RuntimeTopic[] };
  /** Worst-case time one record may spend in retry backoff: it must fit in a transaction. */
  totalRetryBudgetMs(): number;
  /** What the start check compares with the recorded topology (graph/fingerprint.ts); absent: no check. */
  fingerprint?(partitions: ReadonlyMap<string, number>): TopologyFingerprint;
}

export interface RuntimeTopic {
  readonly name: string;
  readonly kind: 'source' | 'sink' | 'repartition' | 'changelog' | 'dead-letter';
  readonly internal: boolean;
  readonly cleanupPolicy: 'delete' | 'compact';
  /** For internal topics: the configs they are created with and held to at start (internal-topic-audit.ts). */
  readonly config?: Readonly<Record<string, string>>;
  readonly partitions?: number;
  /** For internal topics: the sub-topology whose task count decides the partition count. */
  readonly subtopology?: number;
}

export interface RuntimeTask {
  readonly changelogs: readonly { readonly store: string; readonly topic: string; readonly partition: number; readonly sourceTopic?: boolean }[];
  restore(store: string, key: Buffer, value: Buffer | null): void;
  /** Whether a changelog record may be restored: a table's source topic may hold records its serdes refuse (table-source-restore.ts); absent: all may. */
  checkRestored?(store: string, key: Buffer, value: Buffer | null): RestoreRejection | undefined | Promise<RestoreRejection | undefined>;
  process(record: IncomingRecord, collector: RecordCollector): void | Promise<void>;
  /** Emits what the task holds back until its transaction commits (cached results, changelog records); tasks without stores may omit it. */
  prepareCommit?(out: CommitCollector): void | Promise<void>;
  commit(): void;
  rollback(): void;
  /** What the task's stages counted since it was created; tasks without such stages may omit it. */
  readonly metrics?: Readonly<Pick<TaskMetrics, 'lateRecordsDropped' | 'duplicatesDropped' | 'staleVersionsDropped'>>;
  /** Per join stage, stream records that found no row; tasks without such joins may omit it. */
  readonly joinMisses?: ReadonlyMap<string, number>;
  /** Largest record timestamp seen (windows and TTLs run on it); tasks without time-based state may omit it. */
  readonly streamTime?: number;
  /** Whether a wall-clock punctuation is due at `now`; tasks without processor stages may omit it. */
  wallClockDue?(now: number): boolean;
  /** Runs the wall-clock punctuations due at `now` in the open transaction; each output carries its origin. */
  punctuateWallClock?(now: number, collector: RecordCollector): void | Promise<void>;
  /**
   * Holds nothing across records that a rollback must undo (no store, record cache or punctuation), so
   * its records may be processed while the previous transaction commits (speculation.ts); absent: false.
   */
  readonly stateless?: boolean;
  /** The sub-topology the task runs (the processing thread runs a stateless task's by its id). */
  readonly subtopology?: number;
  /** Moves stream time on without a record (for a stateless task: to what the processing thread's copy of it reached). */
  advanceStreamTime?(timestamp: number, collector: RecordCollector): void | Promise<void>;
  /** A store's committed state, for interactive queries; tasks without stores may omit it. */
  reader?(store: string): StoreReader;
  /** Starts preparing the commit without waiting (a task on a processing thread): every such task prepares at once. */
  beginPrepareCommit?(): void;
  /** The task is no longer this worker's (a task on a processing thread lets its thread drop it). */
  close?(): void;
  /** What runs the task is gone with its state (a processing thread that died): the task must be made again and restored. */
  readonly lost?: boolean;
}

/**
 * Where a task may run other than on the main thread (runtime/offload's thread pool): a task it hosts,
 * or undefined when it does not take this one (a sub-topology that needs the main thread, no live thread).
 */
export interface TaskHost {
  host(subtopology: number, partition: number, initialStreamTime: number | undefined): RuntimeTask | undefined;
  /** Starts runners again in place of dead ones, where it may (a budget); how many it started. */
  restartDead?(): Promise<number>;
}

/**
 * A compiled topology as the worker runs it. The compiler (src/graph) plans tasks but cannot build
 * them, since it does not import the runtime; here the runtime's tasks are attached to its plan.
 */
export function runtimeTopology(compiled: TaskPlan & Omit<RuntimeTopology, 'createTask'>): RuntimeTopology {
  return {
    appId: compiled.appId,
    subtopologies: compiled.subtopologies,
    topics: compiled.topics,
    copartitionGroups: compiled.copartitionGroups ?? [],
    globalTables: compiled.globalTables ?? [],
    stores: compiled.stores,
    serdeUsages: () => compiled.serdeUsages(),
    resolvePartitions: (sourcePartitions) => compiled.resolvePartitions(sourcePartitions),
    totalRetryBudgetMs: () => compiled.totalRetryBudgetMs(),
    fingerprint: (partitions) => fingerprintOf(compiled, partitions),
    createTask: (subtopologyId, partition, opts) => createTask(compiled, subtopologyId, partition, opts),
  };
}
