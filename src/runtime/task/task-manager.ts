import type { LateRecord } from '../nodes/task-state.ts';
import { join } from 'node:path';
import { CacheBudget } from '../nodes/record-cache.ts';
import { watermarks } from '../../kafka/clients.ts';
import type { ChangelogOffset, PersistentTaskState } from '../../state/lmdb-store.ts';
import type { PartitionRef } from '../base/partition-progress.ts';
import { parsePartitionKey, partitionKey } from '../base/partition-progress.ts';
import type { CommitCollector } from '../../core/records.ts';
import { producerMessageMaxBytes, RecordSizeLimits } from '../../core/record-size.ts';
import { restoreTasks, type RestoreEnd, type RestoreObserver, type RestoreStart } from './restore.ts';
import type { WorkerServices } from '../base/worker-services.ts';
import type { WorkerEvent } from '../base/worker-events.ts';
import { taskId } from './task.ts';
import { SplitJoinPartitionsError } from '../base/errors.ts';
import { sourceTopicOffsets, StateCheckpoints } from './state-checkpoints.ts';
import type { RuntimeTask, RuntimeTopology, TaskHost } from './worker-topology.ts';

/** How far one changelog partition of a restoring task has been read. */
export interface RestoreProgress {
  readonly store: string;
  readonly topic: string;
  readonly partition: number;
  /** Offsets [from, to) are read; `position` is the next one to apply. */
  readonly from: number;
  readonly to: number;
  position: number;
}

interface DropCounts {
  late: number;
  duplicates: number;
  stale: number;
}

/**
 * The worker's tasks: which task reads each owned source partition, creating and closing them as
 * partitions come and go, restoring their stores, and committing or rolling them back together.
 */
export class TaskManager {
  private readonly tasks = new Map<string, RuntimeTask>();
  /** every owned source partition's task, by partition key */
  private readonly bySource = new Map<string, RuntimeTask>();
  private readonly subtopologyOf = new Map<string, number>();
  /** Persistent stores of each task; empty with the in-memory store. */
  private readonly persistentStates = new Map<RuntimeTask, PersistentTaskState>();
  /** Loaded only for `stateStore: persistent`, so the default never loads LMDB's native binary. */
  private persistentState: typeof PersistentTaskState | undefined;
  private readonly dropsCounted = new WeakMap<RuntimeTask, DropCounts>();
  private readonly joinMissesCounted = new WeakMap<RuntimeTask, Map<string, number>>();
  /** Per join stage, stream records that found no row, over every task this worker has run (committed transactions). */
  readonly joinMisses = new Map<string, number>();
  /** Tasks whose stores are being restored, with each changelog partition's progress: their state is not whole yet. */
  private readonly restoring = new Map<RuntimeTask, RestoreProgress[]>();
  private readonly restoreObserver: RestoreObserver = {
    planned: (task, store, c) => {
      this.restoring.get(task)?.push({ store, topic: c.topic, partition: c.partition, from: c.from, to: c.to, position: c.from });
      this.services.stats.restoreRemaining += c.to - c.from;
    },
    applied: (task, store, offset) => {
      const p = this.restoring.get(task)?.find((r) => r.store === store);
      if (!p) return;
      this.services.stats.restoreRemaining -= Math.min(offset + 1, p.to) - p.position;
      p.position = offset + 1;
    },
    skipped: (_task, store, r) => this.services.emit({ type: 'table-record-not-restored', store, topic: r.topic, partition: r.partition, offset: r.offset, code: r.code, message: r.message }),
  };
  /**
   * False from a rollback until the next commit: a fenced zombie's successor may already be writing the
   * changelog, and at least once the rolled-back batch's changelog records stay behind, so its end
   * may not be what the stores hold.
   */
  private lastTransactionCommitted = true;
  private readonly checkpoints: StateCheckpoints;
  /** One record-cache budget for every task the worker runs (config cacheMaxBytes / cacheMaxRecords). */
  private readonly cache: { readonly budget: CacheBudget; readonly maxRecords?: number };

  constructor(
    private readonly topology: RuntimeTopology,
    private readonly services: WorkerServices,
    /** The global tables' rows, which global-table joins read. */
    private readonly globalRows?: (store: string) => { row(key: unknown): unknown } | undefined,
    /** The group's committed offset of a partition this worker owns: where a table read from that topic stands. */
    private readonly committedOf: (topic: string, partition: number) => number | undefined = () => undefined,
  ) {
    this.recordLimits = new RecordSizeLimits(producerMessageMaxBytes(services.config.kafka));
    const { cacheMaxBytes, cacheMaxRecords } = services.config;
    this.cache = { budget: new CacheBudget(cacheMaxBytes), ...(cacheMaxRecords !== undefined ? { maxRecords: cacheMaxRecords } : {}) };
    for (const sub of topology.subtopologies) for (const t of sub.sourceTopics) this.subtopologyOf.set(t, sub.id);
    // At least once, changelog records of a rolled-back batch stay behind without being in the store: no running checkpoints.
    const interval = services.config.guarantee === 'exactly_once' ? services.config.stateCheckpointIntervalMs : 0;
    this.checkpoints = new StateCheckpoints(
      interval,
      async (topic, partition) => {
        const consumer = this.services.consumer();
        if (!consumer) throw new Error('no consumer');
        return (await watermarks(consumer, topic, partition, 10_000)).high;
      },
      () => this.services.stats.transactionsCommitted,
      this.committedOf,
    );
  }

  /** After each commit: persistent stores are synced and checkpointed every stateCheckpointIntervalMs (state-checkpoints.ts). */
  afterCommit(): Promise<void> {
    return this.checkpoints.afterCommit(this.persistentStates);
  }

  readonly onLateRecord = (late: LateRecord): void => {
    this.onLateNotice({ stage: late.stage, store: late.store, lateByMs: late.lateByMs, topic: late.record.topic, partition: late.record.partition, offset: late.record.offset });
  };

  /** A record dropped as too late, as a task on a processing thread reports it. */
  readonly onLateNotice = (late: Omit<Extract<WorkerEvent, { type: 'late-record' }>, 'type'>): void => {
    this.services.emit({ type: 'late-record', ...late });
  };

  /** The processing threads, once started: they host the tasks of the sub-topologies they can (in-memory stores only). */
  private host: TaskHost | undefined;

  useHost(host: TaskHost | undefined): void {
    this.host = host;
  }

  /** Restarts the host's dead threads (within its budget) before lost tasks are placed again. */
  async restartDeadHosts(): Promise<number> {
    return (await this.host?.restartDead?.()) ?? 0;
  }

  async loadStateStore(): Promise<void> {
    if (this.services.config.stateStore === 'persistent') this.persistentState = (await import('../../state/lmdb-store.ts')).PersistentTaskState;
  }

  get size(): number {
    return this.tasks.size;
  }

  taskFor(key: string): RuntimeTask | undefined {
    return this.bySource.get(key);
  }

  /** The task of a sub-topology for a partition, if this worker runs it (restoring or not). */
  taskOf(subtopology: number, partition: number): RuntimeTask | undefined {
    return this.tasks.get(taskId(subtopology, partition));
  }

  /** This worker's tasks of a sub-topology, by partition. */
  tasksOf(subtopology: number): { readonly partition: number; readonly task: RuntimeTask }[] {
    const prefix = `${subtopology}_`;
    return [...this.tasks].filter(([id]) => id.startsWith(prefix)).map(([id, task]) => ({ partition: Number(id.slice(prefix.length)), task }));
  }

  /** Undefined unless the task's stores are being restored now. */
  restoreProgress(task: RuntimeTask): readonly RestoreProgress[] | undefined {
    return this.restoring.get(task);
  }

  owns(key: string): boolean {
    return this.bySource.has(key);
  }

  /** Keys of every owned source partition. */
  ownedPartitions(): IterableIterator<string> {
    return this.bySource.keys();
  }

  /**
   * What one produce may carry, per topic: librdkafka refuses a record over its message.max.bytes at
   * once, the broker a batch over the topic's max.message.bytes, each on every replay. The topics'
   * limits are learnt at start (learnTopicLimits); until then, the producer's alone.
   */
  recordLimits: RecordSizeLimits;

  /** `streamTimes`: the stream time committed with each partition's offset, to resume the task from. */
  addSources(partitions: readonly PartitionRef[], streamTimes: ReadonlyMap<string, number>): RuntimeTask[] {
    const { config } = this.services;
    const fresh: RuntimeTask[] = [];
    for (const p of partitions) {
      const sub = this.subtopologyOf.get(p.topic);
      if (sub === undefined) continue;
      const id = taskId(sub, p.partition);
      let task = this.tasks.get(id);
      if (!task) {
        this.requireWholeJoin(sub, p.partition, partitions);
        // A task reads the same partition of each of its sub-topology's sources; its stream time is the largest.
        const resumed = partitions
          .filter((q) => q.partition === p.partition && this.subtopologyOf.get(q.topic) === sub)
          .map((q) => streamTimes.get(partitionKey(q.topic, q.partition)))
          .filter((t): t is number => t !== undefined);
        const initialStreamTime = resumed.length > 0 ? Math.max(...resumed) : undefined;
        const timeOption = { recordLimits: this.recordLimits, onLateRecord: this.onLateRecord, tracer: this.services.tracer, ...(this.globalRows ? { globalRows: this.globalRows } : {}), ...(initialStreamTime !== undefined ? { initialStreamTime } : {}) };
        const hosted = this.persistentState ? undefined : this.host?.host(sub, p.partition, initialStreamTime);
        if (hosted !== undefined) {
          task = hosted;
        } else if (this.persistentState) {
          const state = new this.persistentState(join(config.stateDir, config.appId, config.instanceId, id));
          task = this.topology.createTask(sub, p.partition, { storeFactory: state.storeFactory, cache: this.cache, ...timeOption });
          this.persistentStates.set(task, state);
        } else {
          task = this.topology.createTask(sub, p.partition, { cache: this.cache, ...timeOption });
        }
        this.tasks.set(id, task);
        fresh.push(task);
      }
      this.bySource.set(partitionKey(p.topic, p.partition), task);
    }
    return fresh;
  }

  /** A join's task runs only with partition N of every topic it reads (either protocol's range assignor gives them together). */
  private requireWholeJoin(sub: number, partition: number, assigned: readonly PartitionRef[]): void {
    const group = this.topology.copartitionGroups?.find((g) => g.topics.some((t) => this.subtopologyOf.get(t) === sub));
    if (!group) return;
    const missing = group.topics.filter((t) => !assigned.some((q) => q.topic === t && q.partition === partition) && !this.bySource.has(partitionKey(t, partition)));
    if (missing.length > 0) throw new SplitJoinPartitionsError(taskId(sub, partition), group.join, missing.map((t) => `${t}-${partition}`));
  }

  /**
   * Forgets every task whose runner is gone with its state (`lost`: a processing thread died) and
   * returns their source partitions, to be added and restored again (rebalance.ts replaceLost) as if
   * newly assigned: the transaction they wrote into is aborted, so their changelogs hold their state.
   */
  dropLost(): PartitionRef[] {
    const partitions: PartitionRef[] = [];
    for (const [id, task] of [...this.tasks]) {
      if (task.lost !== true) continue;
      this.tasks.delete(id);
      for (const [key, owner] of [...this.bySource]) {
        if (owner !== task) continue;
        this.bySource.delete(key);
        partitions.push(parsePartitionKey(key));
      }
    }
    return partitions;
  }

  /** Returns the task when this was its last source partition. */
  dropSource(p: PartitionRef): RuntimeTask | undefined {
    this.bySource.delete(partitionKey(p.topic, p.partition));
    const sub = this.subtopologyOf.get(p.topic);
    if (sub === undefined) return undefined;
    const id = taskId(sub, p.partition);
    const task = this.tasks.get(id);
    if (!task || [...this.bySource.values()].includes(task)) return undefined;
    this.tasks.delete(id);
    return task;
  }

  /** `committedOf`: the group's committed offset of a source partition, where a table read from that topic is restored up to. */
  async restore(tasks: RuntimeTask[], committedOf: (topic: string, partition: number) => number | undefined = () => undefined): Promise<void> {
    if (tasks.length === 0 || tasks.every((t) => t.changelogs.length === 0)) return;
    const started = Date.now();
    let fromCheckpoint = 0;
    const start: RestoreStart = (task, store, c) => {
      // A table's source topic is restored up to the committed offset: a checkpoint past it (offsets reset since) is no place to resume from.
      const sourceEnd = task.changelogs.some((l) => l.store === store && l.sourceTopic === true) ? (committedOf(c.topic, c.partition) ?? 0) : c.high;
      const offset = this.persistentStates.get(task)?.restoreFrom(store, c.topic, c.partition, c.low, Math.min(c.high, sourceEnd)) ?? c.low;
      if (offset > c.low) fromCheckpoint++;
      return offset;
    };
    const end: RestoreEnd = (_task, c) => (c.sourceTopic ? (committedOf(c.topic, c.partition) ?? 0) : undefined);
    for (const task of tasks) this.restoring.set(task, []);
    let records: number;
    try {
      records = await restoreTasks({ ...this.services.clientConfig(), 'group.id': this.services.config.appId }, tasks, start, (config) => this.services.clients.consumer(config), end, this.restoreObserver, this.services.consumer());
    } finally {
      for (const task of tasks) {
        // What the restore did not read (the end moved, a record was skipped) is no longer to come.
        for (const p of this.restoring.get(task) ?? []) this.services.stats.restoreRemaining -= Math.max(0, p.to - p.position);
        this.restoring.delete(task);
      }
    }
    for (const task of tasks) this.persistentStates.get(task)?.startProcessing();
    this.services.stats.restoredRecords += records;
    this.services.emit({ type: 'restored', records, ms: Date.now() - started, fromCheckpoint });
  }

  /**
   * Closes a task's persistent stores. `clean` (its last transaction is committed or rolled back, and
   * no other worker owns it yet) checkpoints each changelog's end: everything before it is in the store.
   */
  async closeTaskState(task: RuntimeTask, clean: boolean): Promise<void> {
    task.close?.();
    const state = this.persistentStates.get(task);
    if (!state) return;
    this.persistentStates.delete(task);
    const consumer = this.services.consumer();
    let offsets: ChangelogOffset[] | undefined;
    if (clean && consumer && this.lastTransactionCommitted) {
      try {
        const ends = await Promise.all(task.changelogs.filter((c) => !c.sourceTopic).map(async (c) => ({ topic: c.topic, partition: c.partition, offset: (await watermarks(consumer, c.topic, c.partition, 10_000)).high })));
        offsets = [...ends, ...sourceTopicOffsets(task, this.committedOf)];
      } catch {
        // No checkpoint then: the next start rebuilds from the changelog, which is slower but exact.
      }
    }
    await state.close(offsets);
  }

  /** At close: `clean` when the loop ended after its last commit, not on an error. */
  async closeAll(clean: boolean): Promise<void> {
    for (const task of [...this.persistentStates.keys()]) await this.closeTaskState(task, clean);
  }

  /** Called in the open transaction, before its offsets are sent (or, at least once, before the flush that acknowledges it). */
  async prepareCommit(collector: CommitCollector): Promise<void> {
    for (const t of this.tasks.values()) t.beginPrepareCommit?.();
    for (const t of this.tasks.values()) {
      // Nothing to emit, and it may be busy with a record of the next batch meanwhile (speculation.ts).
      if (t.stateless === true) continue;
      const r = t.prepareCommit?.(collector);
      if (r) await r;
    }
  }

  committed(): void {
    for (const t of this.tasks.values()) {
      t.commit();
      this.countDrops(t);
    }
    this.lastTransactionCommitted = true;
  }

  rolledBack(): void {
    for (const t of this.tasks.values()) t.rollback();
    this.lastTransactionCommitted = false;
  }

  /** Tasks with a wall-clock punctuation due at `now`. */
  wallClockDue(now: number): RuntimeTask[] {
    return [...this.tasks.values()].filter((t) => t.wallClockDue?.(now) === true);
  }

  streamTimeOf(key: string): number | undefined {
    return this.bySource.get(key)?.streamTime;
  }

  /** What each task has dropped since the last commit joins the worker's counters (tasks come and go; the counters stay). */
  private countDrops(task: RuntimeTask): void {
    const m = task.metrics;
    if (!m) return;
    const { stats } = this.services;
    const seen = this.dropsCounted.get(task) ?? { late: 0, duplicates: 0, stale: 0 };
    stats.lateRecordsDropped += m.lateRecordsDropped - seen.late;
    stats.duplicatesDropped += m.duplicatesDropped - seen.duplicates;
    stats.staleVersionsDropped += m.staleVersionsDropped - seen.stale;
    this.dropsCounted.set(task, { late: m.lateRecordsDropped, duplicates: m.duplicatesDropped, stale: m.staleVersionsDropped });
    if (task.joinMisses === undefined || task.joinMisses.size === 0) return;
    const counted = this.joinMissesCounted.get(task) ?? new Map<string, number>();
    for (const [join, misses] of task.joinMisses) {
      this.joinMisses.set(join, (this.joinMisses.get(join) ?? 0) + misses - (counted.get(join) ?? 0));
      counted.set(join, misses);
    }
    this.joinMissesCounted.set(task, counted);
  }
}
