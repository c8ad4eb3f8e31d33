// What a worker reports, apart from worker.ts: observability reads these types, and the worker
// depends on nothing of observability, so the arrow between them points one way only.

export interface WorkerStats {
  recordsConsumed: number;
  recordsProduced: number;
  transactionsCommitted: number;
  transactionsAborted: number;
  rebalances: number;
  fencings: number;
  tasks: number;
  restoredRecords: number;
  /** Changelog records applied to the warm copies of tasks other replicas own (runtime/standby/). */
  standbyRecords: number;
  /** Tasks kept warm for other replicas now. */
  standbyTasks: number;
  /** Changelog records the warm copies have still to apply, as of the last fetch (what a takeover now would restore). */
  standbyLag: number;
  /** Changelog records the running restores have still to read (0 when none runs): how far a moved task is from serving. */
  restoreRemaining: number;
  deadLettered: number;
  lastCommitAt: number;
  /** Records a windowed aggregate dropped because every window they belong to had closed. */
  lateRecordsDropped: number;
  /** Records a dedupe stage dropped: their id was seen within its TTL. */
  duplicatesDropped: number;
  /** Records a version guard dropped: not newer than the stored version of their key. */
  staleVersionsDropped: number;
  /** Times a task with several inputs went on without waiting longer for one of them (input-synchronizer.ts). */
  enforcedProcessing: number;
  /** Time tasks spent waiting for one of their inputs, summed over tasks. */
  taskIdleMs: number;
}

export function newWorkerStats(): WorkerStats {
  return {
    recordsConsumed: 0,
    recordsProduced: 0,
    transactionsCommitted: 0,
    transactionsAborted: 0,
    rebalances: 0,
    fencings: 0,
    tasks: 0,
    restoredRecords: 0,
    standbyRecords: 0,
    standbyTasks: 0,
    standbyLag: 0,
    restoreRemaining: 0,
    deadLettered: 0,
    lastCommitAt: 0,
    lateRecordsDropped: 0,
    duplicatesDropped: 0,
    staleVersionsDropped: 0,
    enforcedProcessing: 0,
    taskIdleMs: 0,
  };
}

export type WorkerEvent =
  | { type: 'started'; transactionalId: string }
  | { type: 'assigned'; partitions: string[] }
  | { type: 'revoked'; partitions: string[]; lost: boolean }
  /** fromCheckpoint: changelog partitions of persistent stores that resumed from a checkpoint instead of the start. */
  | { type: 'restored'; records: number; ms: number; fromCheckpoint?: number }
  /**
   * A restore skipped a record of a table's source topic that the table's serdes do not decode: it was
   * dead-lettered when processed (with this topic and offset), and the key keeps its previous row.
   */
  | { type: 'table-record-not-restored'; store: string; topic: string; partition: number; offset: number; code: string; message: string }
  /**
   * What this replica keeps warm for others changed (runtime/standby/): `released` became its own tasks;
   * `caughtUp` reached their changelogs' ends for the first time since adopted.
   */
  | { type: 'standby'; tasks: string[]; adopted: string[]; dropped: string[]; released: string[]; caughtUp?: string[] }
  /** A warm copy could not be opened, read or checkpointed; the task then restores more when it moves here, never wrongly. */
  | { type: 'standby-failed'; reason: string }
  | { type: 'committed'; records: number; ms: number }
  | { type: 'aborted'; reason: string }
  | { type: 'fenced'; reason: string }
  /** A partition could not be sought back to its committed offset: none of its records is processed until a retry succeeds. */
  | { type: 'seek-failed'; partition: string; reason: string }
  /** The loop has been in one step for `forMs` (loop-watch.ts): every Kafka call has a timeout, so this is an await nothing ends, or a long restore. */
  | { type: 'loop-stalled'; step: string; forMs: number }
  /** The producer retries a call (initTransactions, commitTransaction) whose coordinator is busy or away. */
  | { type: 'producer-retry'; call: string; attempt: number; reason: string }
  | { type: 'dead-lettered'; stage: string; code: string; topic: string; partition: number; offset: number }
  /** A windowed aggregate dropped the record: stream time is `lateByMs` past the grace period of its last window. */
  | { type: 'late-record'; stage: string; store: string; lateByMs: number; topic: string; partition: number; offset: number }
  /**
   * At start: the most bytes one record may carry per produced topic (the smaller of the producer's
   * message.max.bytes and the topic's max.message.bytes); `unknown` says why the topics' own limits
   * could not be learnt, when they could not.
   */
  | { type: 'record-limits'; messageMaxBytes: number; topicMaxMessageBytes: Record<string, number>; unknown?: string }
  /**
   * At start and when it stops being used: the sub-topologies the processing thread runs
   * (offload/processing-thread.ts), `hosted` the stateful ones whose tasks the threads host, on `threads`
   * threads; `off` says why none does, `failed` that a thread died while running.
   */
  | { type: 'processing-thread'; subtopologies: number[]; hosted?: number[]; threads?: number; off?: string; failed?: boolean; restarted?: number }
  /**
   * A task that reads several inputs in timestamp order went on without one of them after waiting
   * `waitedMs` (input-synchronizer.ts): records of that input older than those processed now may follow.
   */
  | { type: 'enforced-processing'; task: string; partition: string; waitedMs: number; reason: 'lag' | 'unknown' | 'idle' }
  /** At start: an existing internal topic's setting that could lose records was set to its kind's value (internal-topic-audit.ts). */
  | { type: 'topic-config-corrected'; topic: string; setting: string; from: string; to: string }
  /** At start: existing internal topics whose configs could not be checked (a listener the worker cannot send DescribeConfigs on). */
  | { type: 'topic-configs-unverified'; topics: string[]; reason: string }
  /** At start: a table's source topic (its changelog) whose cleanup.policy lets the broker delete rows a restore needs (table-source-check.ts). */
  | { type: 'table-topic-not-compacted'; topic: string; policy: string; fix: string }
  /** At start: a store or internal topic whose name is derived from a stage's position (graph/generated-names.ts). */
  | { type: 'generated-name'; what: 'store' | 'repartition topic'; name: string; stage: string; message: string }
  /** At start: the topology was compared with the recorded one (worker/upgrade-guard.ts); first: nothing was recorded. */
  | { type: 'topology-checked'; first: boolean; changes: string[] }
  /** At start: a store `--reset-state` named was reset for a change that needed it: its changelogs deleted, its local state removed. */
  | { type: 'store-reset'; store: string; changelogs: string[]; reason: string }
  /** Records of owned repartition partitions below the offsets just committed were deleted (repartition-purge.ts). */
  | { type: 'repartition-purged'; partitions: number }
  /** A purge failed; the records stay until the next one (nothing is lost, the topic only grows for now). */
  | { type: 'repartition-purge-failed'; reason: string }
  /** At start: the consumer group protocol and assignor the worker joins with, and why (group-protocol.ts). */
  | { type: 'group-protocol'; protocol: 'classic' | 'consumer'; assignor: string; reason: string }
  /** At start, under the consumer protocol: whether the group's session timeout is the worker's sessionTimeoutMs (the broker may refuse it: its minimum is 45 s by default). */
  | { type: 'group-session-timeout'; requestedMs: number; applied: boolean; reason?: string }
  /** state: how the loop ended (absent from stand-ins that do not track it). */
  | { type: 'stopped'; state?: 'STOPPED' | 'FAILED' };

/** Lag of one source partition: `recordsBehind` (kafka/lag.ts) from the committed offset to the end (read_committed). */
export interface PartitionLag {
  readonly topic: string;
  readonly partition: number;
  readonly lag: number;
}

/** Records per topic since start; consumed for source topics, produced for sinks and internal topics. */
export interface TopicRecordCount {
  readonly topic: string;
  readonly consumed: number;
  readonly produced: number;
}

/** One move of one of the worker's state machines (its lifecycle, its producer's transaction). */
export interface Transition {
  readonly machine: string;
  readonly from: string;
  readonly to: string;
  /** The call that made the move, so a log line points at the code that did it. */
  readonly call: string;
}

/** How often one state machine made one move, for the metrics. */
export interface TransitionCount {
  readonly machine: string;
  readonly from: string;
  readonly to: string;
  readonly count: number;
}
