import { EventEmitter } from 'node:events';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import type { KafkaConsumer, LibrdKafkaError, Message, Producer, TopicPartitionOffset } from '@confluentinc/kafka-javascript';
import { ensureTopics, fetchPartitionCounts, requireTopics, withAdmin, type AdminClient, type TopicSpec } from '../kafka/admin.ts';
import {
  abortTransaction,
  beginTransaction,
  commitTransaction,
  committedOffsets,
  connectConsumer,
  connectProducer,
  cooperative,
  disconnect,
  ERR,
  flush,
  initTransactions,
  seek,
  sendOffsetsToTransaction,
  watermarks,
  type RdConfig,
} from '../kafka/clients.ts';
import type { ChangelogOffset, PersistentTaskState } from '../state/lmdb-store.ts';
import { parseWorkerConfig, transactionalId, type ResolvedWorkerConfig, type WorkerConfigInput } from './config.ts';
import { claimDefaultInstanceId, type InstanceIdClaim } from './instance-id.ts';
import { refuseLiveNamesake, stepBackIfNamesakeLive, tooManyFencings, type InstanceGuardOptions } from './instance-guard.ts';
import { PartitionProgress, parsePartitionKey, partitionKey, type PartitionRef } from './partition-progress.ts';
import type { CommitCollector, IncomingRecord, OutgoingRecord, RecordCollector, RecordHeader } from './records.ts';
import { formatCommitMetadata, parseCommitMetadata } from './commit-metadata.ts';
import { DEFAULT_MESSAGE_MAX_BYTES, maxRecordBytesFor } from './record-size.ts';
import { restoreTasks, type RestoreStart } from './restore.ts';
import { classifyTxnError, describeKafkaError, isFencing, WorkerError } from './txn-errors.ts';
import { runtimeTopology, type RuntimeTask, type RuntimeTopology } from './worker-topology.ts';
import type { TaskPlan } from '../graph/types.ts';
import type { PartitionLag, TopicRecordCount, WorkerEvent, WorkerStats } from './worker-events.ts';
export type { WorkerEvent, WorkerStats } from './worker-events.ts';

export const LINEAGE = {
  topic: 'onceflow.src.topic',
  partition: 'onceflow.src.partition',
  offset: 'onceflow.src.offset',
  seq: 'onceflow.src.seq',
  txn: 'onceflow.txn.id',
} as const;


/** A refused batch is not a passing broker hiccup; a few tries only rule out a batch that happened to be assembled larger. */
const MAX_SIZE_REFUSALS = 3;

/** The input record whose lineage the records being sent carry, and their next sequence number. */
interface Origin {
  readonly record: IncomingRecord;
  seq: number;
  readonly lineage: { readonly topic: Buffer; readonly partition: Buffer };
  /** Sent later on the record's behalf (a cached aggregate result), not while it was processed. */
  readonly released: boolean;
}

interface RebalanceEvent {
  readonly kind: 'assign' | 'revoke';
  readonly partitions: PartitionRef[];
  readonly lost: boolean;
}


/**
 * One worker: one consumer and one transactional producer (Kafka Streams' exactly_once_v2).
 * Records from a fetched batch run through the tasks inside an open transaction; outputs and
 * repartition records are produced without awaiting each, changelog records (and results a record
 * cache held back) once per key when the transaction is about to commit; the transaction closes
 * with sendOffsetsToTransaction (with the consumer's group metadata, so a stale generation is
 * fenced) and a commit, every commitIntervalMs or maxRecordsPerTransaction records.
 */
export class Worker extends EventEmitter {
  readonly config: ResolvedWorkerConfig;
  readonly topology: RuntimeTopology;
  /** The default instance id this process claimed (none when one was given). */
  private readonly instanceClaim: InstanceIdClaim | undefined;
  readonly stats: WorkerStats = {
    recordsConsumed: 0,
    recordsProduced: 0,
    transactionsCommitted: 0,
    transactionsAborted: 0,
    rebalances: 0,
    fencings: 0,
    tasks: 0,
    restoredRecords: 0,
    deadLettered: 0,
    lastCommitAt: 0,
    lateRecordsDropped: 0,
    duplicatesDropped: 0,
    staleVersionsDropped: 0,
  };
  private readonly txnId: string;
  private consumer: KafkaConsumer | undefined;
  private producer: Producer | undefined;
  private readonly tasks = new Map<string, RuntimeTask>();
  /** every source partition's task, keyed by topic+partition */
  private readonly taskBySource = new Map<string, RuntimeTask>();
  private readonly subtopologyOf = new Map<string, number>();
  private readonly progress = new PartitionProgress();
  private readonly rebalances: RebalanceEvent[] = [];
  private partitionsByTopic = new Map<string, number>();
  private txnOpen = false;
  private txnStartedAt = 0;
  private txnRecords = 0;
  private stopping = false;
  private running: Promise<void> | undefined;
  private fencedAt: number[] = [];
  private readonly lineageCache = new Map<string, { topic: Buffer; partition: Buffer }>();
  private readonly recordsByTopic = new Map<string, { consumed: number; produced: number }>();
  private readonly txnHeader: Buffer;
  private readonly deadLetterTopics: ReadonlySet<string>;
  private readonly chaos = chaosSchedule(process.env.ONCEFLOW_CHAOS_KILL_AT);
  /** Persistent stores of each task; empty with the in-memory store. */
  private readonly taskState = new Map<RuntimeTask, PersistentTaskState>();
  /** Loaded only for `stateStore: persistent`, so the default never loads LMDB's native binary. */
  private persistentState: typeof PersistentTaskState | undefined;
  /** The loop ended after its last commit, not on an error: local state matches the changelog. */
  private cleanExit = false;
  /**
   * False from a rewind until the next commit: a fenced zombie's successor may already be writing the
   * changelog, and at least once the rolled-back batch's changelog records stay behind, so its end
   * may not be what the stores hold.
   */
  private lastTransactionCommitted = true;

  /** `topology`: a compiled topology (`compile(...)`), or the runtime's view of one. */
  constructor(topology: RuntimeTopology | (TaskPlan & Omit<RuntimeTopology, 'createTask'>), config: WorkerConfigInput) {
    super();
    this.topology = 'createTask' in topology ? topology : runtimeTopology(topology);
    const parsed = parseWorkerConfig({ ...config, appId: config.appId ?? topology.appId });
    this.instanceClaim = parsed.instanceId === undefined ? claimDefaultInstanceId(parsed) : undefined;
    this.config = { ...parsed, instanceId: parsed.instanceId ?? this.instanceClaim!.instanceId };
    this.txnId = transactionalId(this.config);
    this.txnHeader = Buffer.from(this.txnId);
    this.deadLetterTopics = new Set(topology.topics.filter((t) => t.kind === 'dead-letter').map((t) => t.name));
  }

  /** What one produce may carry: librdkafka refuses a larger record at once, on every replay. */
  private get maxRecordBytes(): number {
    const configured = Number(this.config.kafka['message.max.bytes']);
    return maxRecordBytesFor(Number.isFinite(configured) && configured > 0 ? configured : undefined);
  }

  get transactionalId(): string {
    return this.txnId;
  }

  private get eos(): boolean {
    return this.config.guarantee === 'exactly_once';
  }

  private baseClientConfig(): RdConfig {
    return { 'bootstrap.servers': this.config.bootstrap, 'client.id': this.txnId, ...this.config.kafka };
  }

  /** Creates internal topics, checks sources, prepares serdes, connects, and starts the loop. */
  async start(): Promise<void> {
    try {
      await this.connectAndRun();
    } catch (e) {
      // A worker that never ran gives its default instance id back to the next one in this process.
      this.instanceClaim?.release();
      throw e;
    }
  }

  private async connectAndRun(): Promise<void> {
    const budget = this.topology.totalRetryBudgetMs();
    if (budget >= this.config.transactionTimeoutMs) {
      throw new WorkerError(
        'RETRY_BUDGET_EXCEEDS_TIMEOUT',
        `the topology's retry policy can hold one record for ${budget} ms, not below transactionTimeoutMs (${this.config.transactionTimeoutMs}): lower maxAttempts/maxBackoffMs or raise the timeout`,
      );
    }
    if (this.config.stateStore === 'persistent') this.persistentState = (await import('../state/lmdb-store.ts')).PersistentTaskState;
    // One admin client for both: short-lived admin clients have been seen to crash the process on teardown (admin.ts).
    await withAdmin(
      this.config.bootstrap,
      async (admin) => {
        await this.prepareTopics(admin);
        // Before this worker's producer exists: its initTransactions would fence a live namesake mid-work.
        await refuseLiveNamesake(admin, { ...this.guardOptions(), sessionTimeoutMs: this.config.sessionTimeoutMs });
      },
      this.config.kafka,
    );
    for (const { serde, ctx } of this.topology.serdeUsages()) {
      await serde.prepare?.(ctx, { registryUrl: this.config.registryUrl });
    }
    this.producer = await this.newProducer();
    this.consumer = await connectConsumer(
      {
        ...this.baseClientConfig(),
        'group.id': this.config.appId,
        'isolation.level': 'read_committed',
        'enable.auto.commit': false,
        'enable.auto.offset.store': false,
        'auto.offset.reset': 'earliest',
        'partition.assignment.strategy': 'cooperative-sticky',
        'session.timeout.ms': this.config.sessionTimeoutMs,
        'heartbeat.interval.ms': Math.max(100, Math.floor(this.config.sessionTimeoutMs / 5)),
        'max.poll.interval.ms': this.config.maxPollIntervalMs,
        'fetch.wait.max.ms': 20,
        'rebalance_cb': (err: LibrdKafkaError, assignment: PartitionRef[]) => this.onRebalance(err, assignment),
      },
      {},
    );
    this.consumer.setDefaultConsumeTimeout(50);
    // Otherwise consume(n) waits up to the timeout for each further message: under a trickle a batch,
    // and the transaction with it, would stay open for seconds.
    (this.consumer as unknown as { setDefaultIsTimeoutOnlyForFirstMessage(v: boolean): void }).setDefaultIsTimeoutOnlyForFirstMessage(true);
    const sources = [...new Set(this.topology.subtopologies.flatMap((s) => s.sourceTopics))];
    this.consumer.subscribe(sources);
    this.emit('event', { type: 'started', transactionalId: this.txnId } satisfies WorkerEvent);
    this.running = this.loop();
    this.running.catch(() => undefined);
  }

  private guardOptions(): InstanceGuardOptions {
    return { bootstrap: this.config.bootstrap, groupId: this.config.appId, transactionalId: this.txnId, kafka: this.config.kafka };
  }

  /** Resolves when the loop ends: after stop(), or rejects on an unrecoverable error. */
  done(): Promise<void> {
    return this.running ?? Promise.resolve();
  }

  /** Finishes and commits the open transaction, leaves the group, and closes both clients. */
  async stop(): Promise<void> {
    this.stopping = true;
    await this.running?.catch(() => undefined);
  }

  private async prepareTopics(admin: AdminClient): Promise<void> {
    const userSources = this.topology.topics.filter((t) => t.kind === 'source' && !t.internal).map((t) => t.name);
    // With auto-creation off (the broker default in production) a produce to a missing topic only
    // times out inside the transaction, which then aborts on every replay: say so at start instead.
    const userOutputs = this.topology.topics.filter((t) => (t.kind === 'sink' || t.kind === 'dead-letter') && !t.internal).map((t) => t.name);
    await requireTopics(admin, { source: userSources, output: userOutputs });
    const counts = await fetchPartitionCounts(admin, userSources);
    const internal = this.topology.resolvePartitions(counts).topics.filter((t) => t.internal);
    const specs: TopicSpec[] = internal.map((t) => ({ name: t.name, partitions: t.partitions ?? 1, compact: t.cleanupPolicy === 'compact' }));
    await ensureTopics(admin, specs);
    this.partitionsByTopic = new Map([...counts, ...specs.map((t) => [t.name, t.partitions] as const)]);
    for (const sub of this.topology.subtopologies) for (const t of sub.sourceTopics) this.subtopologyOf.set(t, sub.id);
  }

  private async newProducer(): Promise<Producer> {
    const conf: RdConfig = {
      ...this.baseClientConfig(),
      'enable.idempotence': true,
      'linger.ms': 5,
      'partitioner': 'murmur2_random',
      'queue.buffering.max.messages': 2_000_000,
      'queue.buffering.max.kbytes': 1_048_576,
      'dr_cb': !this.eos,
    };
    if (this.eos) {
      conf['transactional.id'] = this.txnId;
      conf['transaction.timeout.ms'] = this.config.transactionTimeoutMs;
    }
    const producer = await connectProducer(conf);
    if (!this.eos) {
      producer.on('delivery-report', (err) => {
        if (err) this.deliveryError ??= err;
      });
    }
    if (this.eos) {
      for (let attempt = 1; ; attempt++) {
        try {
          await initTransactions(producer, this.config.transactionTimeoutMs * 3);
          break;
        } catch (e) {
          if (isKafkaError(e) && e.code === ERR.ERR_TRANSACTIONAL_ID_AUTHORIZATION_FAILED) {
            await disconnect(producer);
            throw new WorkerError('TRANSACTIONAL_ID_NOT_AUTHORIZED', `the principal may not use transactional id ${this.txnId}: grant WRITE on TransactionalId prefix ${this.config.appId}-`, { cause: e });
          }
          // CONCURRENT_TRANSACTIONS right after a restart: the coordinator is still aborting the crashed incarnation's transaction.
          if (classifyTxnError(e) === 'retriable' && attempt < 20) {
            await sleep(Math.min(2000, 100 * attempt));
            continue;
          }
          await disconnect(producer);
          throw e;
        }
      }
    }
    return producer;
  }
  private deliveryError: unknown;

  private onRebalance(err: LibrdKafkaError, assignment: PartitionRef[]): void {
    const consumer = this.consumer;
    if (!consumer) return;
    const kind = err.code === ERR.ERR__ASSIGN_PARTITIONS ? 'assign' : 'revoke';
    const partitions = assignment.map((a) => ({ topic: a.topic, partition: a.partition }));
    let lost = false;
    try {
      lost = kind === 'revoke' && cooperative(consumer).assignmentLost();
    } catch {
      lost = false;
    }
    // Released only once the loop has committed (or aborted) the open transaction: see handleRebalances.
    this.rebalances.push({ kind, partitions, lost });
    if (this.loopEnded) this.handleRebalancesNow();
  }
  private loopEnded = false;
  private transientFailures = 0;
  /** Transactions in a row the broker refused for a record batch over a topic's max.message.bytes. */
  private sizeRefusals = 0;

  private handleRebalancesNow(): void {
    // During close there is no open transaction: hand partitions back at once so close does not hang.
    const consumer = this.consumer;
    if (!consumer) return;
    for (const ev of this.rebalances.splice(0)) {
      try {
        if (ev.kind === 'revoke') cooperative(consumer).incrementalUnassign(ev.partitions);
        else cooperative(consumer).incrementalAssign(ev.partitions);
      } catch {
        /* not connected any more */
      }
    }
  }

  private async handleRebalances(): Promise<void> {
    while (this.rebalances.length > 0) {
      const ev = this.rebalances.shift();
      if (!ev) break;
      const consumer = this.consumer;
      if (!consumer) return;
      this.stats.rebalances++;
      const names = ev.partitions.map((p) => `${p.topic}-${p.partition}`);
      if (ev.kind === 'revoke') {
        if (this.txnOpen) {
          if (ev.lost) await this.abort('partitions lost');
          else await this.commit();
        }
        for (const p of ev.partitions) {
          const closed = this.dropSource(p);
          // Before the unassign: until then no other worker writes this task's changelog.
          if (closed) await this.closeTaskState(closed, !ev.lost);
        }
        cooperative(consumer).incrementalUnassign(ev.partitions);
        this.emit('event', { type: 'revoked', partitions: names, lost: ev.lost } satisfies WorkerEvent);
      } else {
        const streamTimes = await this.loadCommitted(ev.partitions);
        const fresh = this.addSources(ev.partitions, streamTimes);
        await this.restore(fresh);
        cooperative(consumer).incrementalAssign(ev.partitions.map((p) => this.progress.assignAt(p)));
        this.emit('event', { type: 'assigned', partitions: names } satisfies WorkerEvent);
      }
      this.stats.tasks = this.tasks.size;
    }
  }

  /** `streamTimes`: the stream time committed with each partition's offset, to resume the task from. */
  private addSources(partitions: readonly PartitionRef[], streamTimes: ReadonlyMap<string, number>): RuntimeTask[] {
    const fresh: RuntimeTask[] = [];
    for (const p of partitions) {
      const sub = this.subtopologyOf.get(p.topic);
      if (sub === undefined) continue;
      const id = `${sub}_${p.partition}`;
      let task = this.tasks.get(id);
      if (!task) {
        // A task reads the same partition of each of its sub-topology's sources; its stream time is the largest.
        const resumed = partitions
          .filter((q) => q.partition === p.partition && this.subtopologyOf.get(q.topic) === sub)
          .map((q) => streamTimes.get(partitionKey(q.topic, q.partition)))
          .filter((t): t is number => t !== undefined);
        const timeOpt = { maxRecordBytes: this.maxRecordBytes, ...(resumed.length > 0 ? { initialStreamTime: Math.max(...resumed) } : {}) };
        if (this.persistentState) {
          const state = new this.persistentState(join(this.config.stateDir, this.config.appId, this.config.instanceId, id));
          task = this.topology.createTask(sub, p.partition, { storeFactory: state.storeFactory, cacheMaxRecords: this.config.cacheMaxRecords, ...timeOpt });
          this.taskState.set(task, state);
        } else {
          task = this.topology.createTask(sub, p.partition, { cacheMaxRecords: this.config.cacheMaxRecords, ...timeOpt });
        }
        this.tasks.set(id, task);
        fresh.push(task);
      }
      this.taskBySource.set(partitionKey(p.topic, p.partition), task);
    }
    return fresh;
  }

  /** Returns the task when this was its last source partition. */
  private dropSource(p: PartitionRef): RuntimeTask | undefined {
    const key = partitionKey(p.topic, p.partition);
    this.taskBySource.delete(key);
    this.progress.forget(key);
    const sub = this.subtopologyOf.get(p.topic);
    if (sub === undefined) return undefined;
    const id = `${sub}_${p.partition}`;
    const task = this.tasks.get(id);
    if (!task || [...this.taskBySource.values()].includes(task)) return undefined;
    this.tasks.delete(id);
    return task;
  }

  private async restore(tasks: RuntimeTask[]): Promise<void> {
    if (tasks.length === 0 || tasks.every((t) => t.changelogs.length === 0)) return;
    const started = Date.now();
    let fromCheckpoint = 0;
    const start: RestoreStart = (task, store, c) => {
      const offset = this.taskState.get(task)?.restoreFrom(store, c.topic, c.partition, c.low, c.high) ?? c.low;
      if (offset > c.low) fromCheckpoint++;
      return offset;
    };
    const records = await restoreTasks({ ...this.baseClientConfig(), 'group.id': this.config.appId }, tasks, start);
    for (const task of tasks) this.taskState.get(task)?.startProcessing();
    this.stats.restoredRecords += records;
    this.emit('event', { type: 'restored', records, ms: Date.now() - started, fromCheckpoint } satisfies WorkerEvent);
  }

  /**
   * Closes a task's persistent stores. `clean` (its last transaction is committed or rolled back, and
   * no other worker owns it yet) checkpoints each changelog's end: everything before it is in the store.
   */
  private async closeTaskState(task: RuntimeTask, clean: boolean): Promise<void> {
    const state = this.taskState.get(task);
    if (!state) return;
    this.taskState.delete(task);
    const consumer = this.consumer;
    let offsets: ChangelogOffset[] | undefined;
    if (clean && consumer && this.lastTransactionCommitted) {
      try {
        offsets = await Promise.all(task.changelogs.map(async (c) => ({ topic: c.topic, partition: c.partition, offset: (await watermarks(consumer, c.topic, c.partition, 10_000)).high })));
      } catch {
        // No checkpoint then: the next start rebuilds from the changelog, which is slower but exact.
      }
    }
    await state.close(offsets);
  }

  /** Records each partition's committed offset; returns the stream time committed with it, where there is one. */
  private async loadCommitted(partitions: readonly PartitionRef[]): Promise<Map<string, number>> {
    const streamTimes = new Map<string, number>();
    const consumer = this.consumer;
    if (!consumer || partitions.length === 0) return streamTimes;
    const offsets = await committedOffsets(consumer, [...partitions], 30_000);
    for (const o of offsets) {
      const key = partitionKey(o.topic, o.partition);
      this.progress.committed.set(key, o.offset >= 0 ? o.offset : undefined);
      const streamTime = parseCommitMetadata(o.metadata)?.streamTime;
      if (streamTime !== undefined) streamTimes.set(key, streamTime);
    }
    return streamTimes;
  }

  private async loop(): Promise<void> {
    const consumer = this.consumer;
    if (!consumer) throw new Error('loop before start');
    try {
      while (!this.stopping) {
        await this.handleRebalances();
        if (this.progress.unsettled.size > 0) await this.settlePartitions();
        let batch: Message[];
        try {
          batch = await consumeBatchOrEmpty(consumer, this.config.consumeBatchSize);
        } catch (e) {
          this.emit('event', { type: 'aborted', reason: `consume failed: ${describeKafkaError(e)}` } satisfies WorkerEvent);
          await sleep(100);
          continue;
        }
        if (batch.length > 0) {
          try {
            await this.processBatch(batch);
          } catch (e) {
            if (isTransientError(e)) {
              // Not the record's fault (e.g. the schema registry is down): drop this attempt whole and read again.
              await this.abort(`transient failure, retrying: ${describeKafkaError(e)}`);
              await sleep(Math.min(5_000, 250 * 2 ** Math.min(this.transientFailures++, 5)));
              continue;
            }
            if (!isKafkaError(e)) throw e;
            await this.recover(e);
            continue;
          }
          this.transientFailures = 0;
        }
        if (this.txnOpen && (Date.now() - this.txnStartedAt >= this.config.commitIntervalMs || this.txnRecords >= this.config.maxRecordsPerTransaction)) {
          await this.commit();
        }
      }
      if (this.txnOpen) await this.commit();
      this.cleanExit = true;
    } finally {
      this.loopEnded = true;
      await this.close();
    }
  }

  private async processBatch(batch: Message[]): Promise<void> {
    for (const m of batch) {
      const key = partitionKey(m.topic, m.partition);
      const task = this.taskBySource.get(key);
      // A record of a partition revoked after the fetch (its next owner reads it), or of one whose
      // position is not yet back at its committed offset (it is read again once it is).
      if (!task || !this.progress.mayProcess(key)) continue;
      if (!this.txnOpen) {
        await this.begin();
        this.chaosPoint('before-produce');
      }
      const record = toIncoming(m);
      const result = task.process(record, this.collectorFor(record));
      if (result) await result;
      this.progress.pending.set(key, { topic: m.topic, partition: m.partition, offset: m.offset + 1 });
      this.txnRecords++;
      this.stats.recordsConsumed++;
      this.topicCount(m.topic).consumed++;
    }
  }

  private current: Origin | undefined;
  private readonly collector: RecordCollector = { send: (r) => this.send(r) };
  /** Origins of records a task releases later on behalf of an input record (cached aggregate results). */
  private readonly released = new WeakMap<IncomingRecord, Origin>();

  private collectorFor(record: IncomingRecord): RecordCollector {
    this.current = { record, seq: 0, lineage: this.lineageOf(record), released: false };
    return this.collector;
  }

  private lineageOf(record: IncomingRecord): { topic: Buffer; partition: Buffer } {
    const k = partitionKey(record.topic, record.partition);
    let lineage = this.lineageCache.get(k);
    if (!lineage) {
      lineage = { topic: Buffer.from(record.topic), partition: Buffer.from(String(record.partition)) };
      this.lineageCache.set(k, lineage);
    }
    return lineage;
  }

  private releasedOrigin(record: IncomingRecord): Origin {
    let o = this.released.get(record);
    if (!o) this.released.set(record, (o = { record, seq: 0, lineage: this.lineageOf(record), released: true }));
    return o;
  }

  private send(r: OutgoingRecord): void {
    const producer = this.producer;
    const cur = r.source === undefined ? this.current : this.releasedOrigin(r.source);
    if (!producer || !cur) throw new Error('send outside a batch');
    const headers: Record<string, Buffer>[] = [];
    if (r.headers) for (const h of r.headers) headers.push({ [h.key]: h.value });
    headers.push(
      { [LINEAGE.topic]: cur.lineage.topic },
      { [LINEAGE.partition]: cur.lineage.partition },
      { [LINEAGE.offset]: Buffer.from(String(cur.record.offset)) },
      // Released results number apart ('c0', 'c1', ...) from what their record's own processing sent.
      { [LINEAGE.seq]: Buffer.from(cur.released ? `c${cur.seq++}` : String(cur.seq++)) },
      { [LINEAGE.txn]: this.txnHeader },
    );
    producer.produce(r.topic, r.partition ?? null, r.value, r.key, r.timestamp ?? cur.record.timestamp, null, headers);
    this.countProduced(r.topic);
    if (this.deadLetterTopics.has(r.topic)) {
      const header = (k: string) => r.headers?.find((h) => h.key === k)?.value.toString() ?? 'unknown';
      this.stats.deadLettered++;
      this.emit('event', {
        type: 'dead-lettered',
        stage: header('onceflow.error.stage'),
        code: header('onceflow.error.code'),
        topic: cur.record.topic,
        partition: cur.record.partition,
        offset: cur.record.offset,
      } satisfies WorkerEvent);
    }
  }

  private countProduced(topic: string): void {
    this.stats.recordsProduced++;
    this.topicCount(topic).produced++;
  }

  /**
   * The tasks' changelog records, one per key written in this transaction. Their own path, not send():
   * they stand for no one input record, and restore, their only reader, needs no lineage headers.
   */
  private readonly commitCollector: CommitCollector = {
    send: (r) => this.send(r),
    changelog: (r) => {
      const producer = this.producer;
      if (!producer) throw new Error('changelog record without a producer');
      producer.produce(r.topic, r.partition ?? null, r.value, r.key, r.timestamp ?? Date.now());
      this.countProduced(r.topic);
    },
  };

  /** Called in the open transaction, before its offsets are sent (or, at least once, before the flush that acknowledges it). */
  private async prepareCommit(): Promise<void> {
    for (const t of this.tasks.values()) {
      const r = t.prepareCommit?.(this.commitCollector);
      if (r) await r;
    }
  }

  private async begin(): Promise<void> {
    if (this.eos && this.producer) await beginTransaction(this.producer);
    this.txnOpen = true;
    this.txnStartedAt = Date.now();
    this.txnRecords = 0;
  }

  private offsetsToCommit(): TopicPartitionOffset[] {
    const at = Date.now();
    return [...this.progress.pending].map(([key, o]) => ({ ...o, metadata: formatCommitMetadata({ by: this.txnId, at, streamTime: this.taskBySource.get(key)?.streamTime }) }));
  }

  private markCommitted(): void {
    this.progress.markCommitted();
    for (const t of this.tasks.values()) {
      t.commit();
      this.countDrops(t);
    }
    this.lastTransactionCommitted = true;
    this.sizeRefusals = 0;
    this.txnOpen = false;
    this.stats.transactionsCommitted++;
    this.stats.lastCommitAt = Date.now();
  }

  /** What each task has dropped since the last commit joins the worker's counters (tasks come and go; the counters stay). */
  private countDrops(task: RuntimeTask): void {
    const m = task.metrics;
    if (!m) return;
    const seen = this.dropsCounted.get(task) ?? { late: 0, duplicates: 0, stale: 0 };
    this.stats.lateRecordsDropped += m.lateRecordsDropped - seen.late;
    this.stats.duplicatesDropped += m.duplicatesDropped - seen.duplicates;
    this.stats.staleVersionsDropped += m.staleVersionsDropped - seen.stale;
    this.dropsCounted.set(task, { late: m.lateRecordsDropped, duplicates: m.duplicatesDropped, stale: m.staleVersionsDropped });
  }
  private readonly dropsCounted = new WeakMap<RuntimeTask, { late: number; duplicates: number; stale: number }>();

  private async commit(): Promise<void> {
    const producer = this.producer;
    const consumer = this.consumer;
    if (!producer || !consumer || !this.txnOpen) return;
    const started = Date.now();
    const records = this.txnRecords;
    const offsets = this.offsetsToCommit();
    if (!this.eos) {
      await this.commitAtLeastOnce(producer, consumer, offsets);
      return;
    }
    try {
      await this.prepareCommit();
      this.chaosPoint('after-produce');
      if (this.config.unsafeCommitOffsetsOutsideTransaction) {
        if (offsets.length > 0) consumer.commitSync(offsets);
      } else if (offsets.length > 0) {
        await sendOffsetsToTransaction(producer, offsets, consumer, this.config.transactionTimeoutMs);
      }
      this.chaosPoint('after-send-offsets');
      await this.commitWithRetry(producer);
      this.markCommitted();
      this.emit('event', { type: 'committed', records, ms: Date.now() - started } satisfies WorkerEvent);
    } catch (e) {
      await this.recover(e);
    }
  }

  /** A retriable commit failure is retried with the same producer: librdkafka resumes the same EndTxn. */
  private async commitWithRetry(producer: Producer): Promise<void> {
    for (let attempt = 1; ; attempt++) {
      try {
        const committing = commitTransaction(producer, this.config.transactionTimeoutMs);
        this.chaosPoint('during-commit');
        await committing;
        return;
      } catch (e) {
        if (classifyTxnError(e) !== 'retriable' || attempt >= 5) throw e;
        await sleep(100 * attempt);
      }
    }
  }

  private async commitAtLeastOnce(producer: Producer, consumer: KafkaConsumer, offsets: TopicPartitionOffset[]): Promise<void> {
    try {
      await this.prepareCommit();
      await flush(producer, 30_000);
      if (this.deliveryError) throw this.deliveryError;
      // The outputs are acknowledged, the offsets not yet committed: a crash here replays them.
      this.chaosPoint('after-produce');
      if (offsets.length > 0) consumer.commitSync(offsets);
      this.markCommitted();
    } catch (e) {
      this.deliveryError = undefined;
      await this.rewind(`at-least-once commit failed: ${describeKafkaError(e)}`);
    }
  }

  private async abort(reason: string): Promise<void> {
    const producer = this.producer;
    if (this.eos && producer && this.txnOpen) {
      try {
        await abortTransaction(producer, this.config.transactionTimeoutMs);
      } catch (e) {
        // The transaction may have been committing when it failed (EndTxn's outcome unknown): whether
        // it landed is read back, never assumed (rule 5 in partition-progress.ts).
        await this.replaceAfterFailure(e);
        return;
      }
    }
    await this.rewind(reason);
  }

  /** Roll the tasks back to their last commit and put every owned partition back at its committed offset. */
  private async rewind(reason: string): Promise<void> {
    for (const t of this.tasks.values()) t.rollback();
    this.lastTransactionCommitted = false;
    this.progress.unsettle(this.taskBySource.keys());
    this.txnOpen = false;
    this.stats.transactionsAborted++;
    this.emit('event', { type: 'aborted', reason } satisfies WorkerEvent);
    await this.settlePartitions();
  }

  /** Seeks each unsettled partition to its committed offset; one that cannot be sought now stays unsettled (rule 2). */
  private async settlePartitions(): Promise<void> {
    const consumer = this.consumer;
    if (!consumer) return;
    for (const key of [...this.progress.unsettled]) {
      if (!this.taskBySource.has(key)) {
        this.progress.forget(key);
        continue;
      }
      try {
        await seek(consumer, this.progress.rewindTarget(key), 10_000);
        this.progress.settled(key);
      } catch {
        // Retried before the next fetch; until then none of its records is processed.
      }
    }
  }

  private async recover(e: unknown): Promise<void> {
    const kind = classifyTxnError(e);
    const reason = describeKafkaError(e);
    if (kind === 'abortable') {
      await this.abort(`transaction aborted: ${reason}`);
      this.failIfTopicRefusesRecordSize(e);
      return;
    }
    await this.replaceAfterFailure(e);
  }

  /** Fatal, or unknown: this producer cannot be trusted. Whether the last commit landed is read back, never assumed. */
  private async replaceAfterFailure(e: unknown): Promise<void> {
    const reason = describeKafkaError(e);
    if (classifyTxnError(e) === 'fatal' || isFencing(e)) {
      this.stats.fencings++;
      this.emit('event', { type: 'fenced', reason } satisfies WorkerEvent);
      if (isFencing(e)) await stepBackIfNamesakeLive(this.guardOptions(), e);
      const now = Date.now();
      this.fencedAt = [...this.fencedAt.filter((t) => now - t < 60_000), now];
      if (this.fencedAt.length >= 4) throw tooManyFencings(this.guardOptions(), this.fencedAt.length, e);
    }
    await this.replaceProducer(reason);
    await this.resolveAmbiguousCommit();
  }

  /**
   * The broker measures a record batch against the topic's own max.message.bytes, which librdkafka
   * does not know and cannot split for: the same batch is refused on every replay, so the worker
   * would abort forever. After a few refusals in a row it stops with the topic named and nothing of
   * the refused transactions committed.
   */
  private failIfTopicRefusesRecordSize(e: unknown): void {
    if (!isKafkaError(e) || e.code !== ERR.ERR_MSG_SIZE_TOO_LARGE) {
      this.sizeRefusals = 0;
      return;
    }
    if (++this.sizeRefusals < MAX_SIZE_REFUSALS) return;
    const topic = /ProduceRequest for (\S+) \[/.exec(e.message)?.[1];
    throw new WorkerError(
      'RECORD_TOO_LARGE_FOR_TOPIC',
      `the broker refused ${this.sizeRefusals} transactions in a row: a record batch for ${topic === undefined ? 'an output topic' : `topic ${topic}`} is over that topic's max.message.bytes, which is below the producer's (${this.config.kafka['message.max.bytes'] ?? DEFAULT_MESSAGE_MAX_BYTES}). Nothing of them was committed. Set kafka.message.max.bytes and kafka.batch.size at or below the topic's max.message.bytes (larger records are then dead-lettered as RECORD_TOO_LARGE), or raise the topic's limit`,
      { cause: e },
    );
  }

  private async replaceProducer(reason: string): Promise<void> {
    const old = this.producer;
    this.producer = undefined;
    if (old) await disconnect(old, 5000);
    this.producer = await this.newProducer();
    this.emit('event', { type: 'aborted', reason: `producer replaced: ${reason}` } satisfies WorkerEvent);
  }

  /**
   * After the producer was replaced: the last transaction's outcome is read back from the group's
   * committed offsets of every owned partition, and every owned partition is then sought to what was
   * read (rules 1 and 5 in partition-progress.ts), whether the transaction landed or not.
   */
  private async resolveAmbiguousCommit(): Promise<void> {
    const consumer = this.consumer;
    const pending = [...this.progress.pending.values()];
    const owned = [...this.taskBySource.keys()].map(parsePartitionKey);
    let readBack: Awaited<ReturnType<typeof committedOffsets>> | undefined;
    for (let attempt = 1; consumer && owned.length > 0 && readBack === undefined && attempt <= 3; attempt++) {
      readBack = await committedOffsets(consumer, owned, 30_000).catch(() => undefined);
    }
    const landed = readBack !== undefined && pending.length > 0 && pending.every((p) => readBack.some((c) => c.topic === p.topic && c.partition === p.partition && c.offset === p.offset));
    if (landed) this.markCommitted();
    // Unread, the local view stands: it is what this worker last saw committed, so at worst a landed transaction is repeated, never skipped.
    for (const c of readBack ?? []) this.progress.committed.set(partitionKey(c.topic, c.partition), c.offset >= 0 ? c.offset : undefined);
    if (!landed) {
      await this.rewind(pending.length === 0 ? 'transaction dropped' : 'transaction did not commit');
      return;
    }
    this.progress.unsettle(this.taskBySource.keys());
    await this.settlePartitions();
  }

  private async close(): Promise<void> {
    const consumer = this.consumer;
    const producer = this.producer;
    for (const task of [...this.taskState.keys()]) await this.closeTaskState(task, this.cleanExit);
    if (consumer) {
      await disconnect(consumer, this.config.shutdownTimeoutMs);
    }
    if (producer) await disconnect(producer, 5000);
    this.consumer = undefined;
    this.producer = undefined;
    this.instanceClaim?.release();
    this.emit('event', { type: 'stopped' } satisfies WorkerEvent);
  }

  /** Test hook for the chaos harness: SIGKILL this process the n-th time it passes `phase`. */
  private chaosPoint(phase: ChaosPhase): void {
    if (!this.chaos || this.chaos.phase !== phase) return;
    if (--this.chaos.remaining > 0) return;
    if (phase === 'during-commit') setImmediate(() => process.kill(process.pid, 'SIGKILL'));
    else process.kill(process.pid, 'SIGKILL');
  }

  private topicCount(topic: string): { consumed: number; produced: number } {
    let c = this.recordsByTopic.get(topic);
    if (!c) this.recordsByTopic.set(topic, (c = { consumed: 0, produced: 0 }));
    return c;
  }

  topicRecords(): TopicRecordCount[] {
    return [...this.recordsByTopic].map(([topic, c]) => ({ topic, ...c }));
  }

  /**
   * End offset minus the next offset to read, per assigned source partition. The end is the one the
   * client cached on its last fetch, which under read_committed is the last stable offset.
   */
  partitionLag(): PartitionLag[] {
    const consumer = this.consumer;
    if (!consumer) return [];
    const out: PartitionLag[] = [];
    for (const key of this.taskBySource.keys()) {
      const { topic, partition } = parsePartitionKey(key);
      let end: number;
      try {
        end = consumer.getWatermarkOffsets(topic, partition).highOffset;
      } catch {
        continue; // not fetched yet: no end offset known
      }
      if (end < 0) continue;
      const next = this.progress.pending.get(key)?.offset ?? this.progress.committed.get(key) ?? 0;
      out.push({ topic, partition, lag: Math.max(0, end - next) });
    }
    return out;
  }

  /** Partition counts of every topic the application uses, once started. */
  partitionCount(topic: string): number | undefined {
    return this.partitionsByTopic.get(topic);
  }
}

export const CHAOS_PHASES = ['before-produce', 'after-produce', 'after-send-offsets', 'during-commit'] as const;
export type ChaosPhase = (typeof CHAOS_PHASES)[number];

function chaosSchedule(spec: string | undefined): { phase: ChaosPhase; remaining: number } | undefined {
  if (!spec) return undefined;
  const [phase, n] = spec.split(':');
  if (!CHAOS_PHASES.includes(phase as ChaosPhase)) return undefined;
  return { phase: phase as ChaosPhase, remaining: Math.max(1, Number(n) || 1) };
}

function isTransientError(e: unknown): boolean {
  return typeof e === 'object' && e !== null && !isKafkaError(e) && ((e as { retriable?: unknown }).retriable === true || (e as { code?: unknown }).code === 'RETRIABLE');
}

function isKafkaError(e: unknown): e is LibrdKafkaError {
  return typeof e === 'object' && e !== null && typeof (e as { code?: unknown }).code === 'number';
}

function consumeBatchOrEmpty(consumer: KafkaConsumer, max: number): Promise<Message[]> {
  return new Promise((resolve, reject) =>
    consumer.consume(max, (err, messages) => {
      if (err && err.code !== ERR.ERR__TIMED_OUT && err.code !== ERR.ERR__PARTITION_EOF) reject(err);
      else resolve(messages ?? []);
    }),
  );
}

const NO_HEADERS: readonly RecordHeader[] = [];

function toIncoming(m: Message): IncomingRecord {
  let headers: readonly RecordHeader[] = NO_HEADERS;
  if (m.headers && m.headers.length > 0) {
    const list: RecordHeader[] = [];
    for (const h of m.headers) {
      for (const k in h) {
        const v = h[k];
        if (v !== undefined) list.push({ key: k, value: typeof v === 'string' ? Buffer.from(v) : v });
      }
    }
    headers = list;
  }
  const key = m.key === undefined || m.key === null ? null : typeof m.key === 'string' ? Buffer.from(m.key) : m.key;
  return { topic: m.topic, partition: m.partition, offset: m.offset, key, value: m.value, timestamp: m.timestamp ?? Date.now(), headers };
}
