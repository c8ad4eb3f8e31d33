import type { ResolvedWorkerConfig } from '../runtime/base/config.ts';
import type { InteractiveQueries } from '../runtime/queries/interactive-queries.ts';
import type { PartitionLag, TopicRecordCount, Transition, TransitionCount, WorkerEvent, WorkerStats } from '../runtime/base/worker-events.ts';

// Still exported from here: they are part of the view a worker gives observability.
export type { PartitionLag, TopicRecordCount };

/**
 * What observability needs of a worker. Structural, so metrics, health and logs can be attached to
 * the real Worker or to a stand-in in tests, and so worker internals can change without touching this.
 */
export interface ObservedWorker {
  readonly config: ResolvedWorkerConfig;
  readonly stats: Readonly<WorkerStats>;
  readonly transactionalId: string;
  on(event: 'event', listener: (e: WorkerEvent) => void): unknown;
  off(event: 'event', listener: (e: WorkerEvent) => void): unknown;
  on(event: 'transition', listener: (t: Transition) => void): unknown;
  off(event: 'transition', listener: (t: Transition) => void): unknown;
  /** Its lifecycle state (CREATED, STARTING, RUNNING, REBALANCING, PENDING_SHUTDOWN, STOPPED, FAILED), where the worker has one. */
  readonly state?: string;
  /** How often each of its state machines made each move. */
  transitionCounts?(): readonly TransitionCount[];
  /** Rejects when the worker's loop died of an unrecoverable error. */
  done(): Promise<void>;
  /** Lag of each assigned source partition, as `onceflow status` counts it (kafka/lag.ts). */
  partitionLag?(): readonly PartitionLag[] | Promise<readonly PartitionLag[]>;
  /** Records consumed and produced per topic since start. */
  topicRecords?(): readonly TopicRecordCount[];
  /** Per join stage, stream records that found no row in the table. */
  joinMisses?(): ReadonlyMap<string, number>;
  /** Tasks waiting now for one of their inputs (input-synchronizer.ts). */
  waitingTasks?(): readonly { readonly task: string; readonly partition: string; readonly forMs: number }[];
  /** Its stores' interactive queries, served under /stores and /metadata. */
  readonly queries?: InteractiveQueries;
}
