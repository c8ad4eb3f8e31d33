import { EventEmitter } from 'node:events';
import { setTimeout as sleep } from 'node:timers/promises';
import type { KafkaConsumer, Message } from '@confluentinc/kafka-javascript';
import { disconnect } from '../../kafka/clients.ts';
import type { TaskPlan } from '../../graph/types.ts';
import { kafkaClients, type ClientSupplier } from './client-supplier.ts';
import { parseWorkerConfig, transactionalId, type ResolvedWorkerConfig, type WorkerConfigInput } from './config.ts';
import { IllegalTransitionError, WorkerError } from './errors.ts';
import { noFaults, type FaultHook } from './faults.ts';
import { claimDefaultInstanceId, lockInstanceId, type InstanceIdClaim } from './instance-id.ts';
import { refuseLiveNamesake, type InstanceGuardOptions } from './instance-guard.ts';
import { TimeOrderedBatch } from '../loop/batch-order.ts';
import { PartitionProgress } from '../loop/partition-progress.ts';
import { RebalanceHandler } from '../loop/rebalance.ts';
import { WorkerRecordCollector } from '../loop/record-collector.ts';
import type { RuntimeContext } from './runtime-context.ts';
import { StateMachine, type Transition, type TransitionCount } from './state-machine.ts';
import { TaskManager } from '../task/task-manager.ts';
import { producerMessageMaxBytes, RecordSizeLimits, RecordTooLargeError } from '../../core/record-size.ts';
import { AtLeastOnceOutput } from '../transaction/at-least-once.ts';
import { ExactlyOnceOutput } from '../transaction/exactly-once.ts';
import { describeKafkaError, isEmptyFetch, isKafkaError, isTransientError } from '../transaction/kafka-errors.ts';
import type { TransactionalOutput } from '../transaction/output.ts';
import { TransactionDriver } from '../transaction/driver.ts';
import { runtimeTopology, type RuntimeTopology } from '../task/worker-topology.ts';
import type { PartitionLag, TopicRecordCount, WorkerEvent, WorkerStats } from './worker-events.ts';
import { LOOPING, WORKER_TRANSITIONS, type WorkerState } from './worker-state.ts';
import { consumerConfig, partitionLag, prepareTopics } from './worker-setup.ts';
import { GlobalTableReader } from '../global-tables/global-table-reader.ts';
import { Speculation } from '../loop/speculation.ts';
import { InteractiveQueries } from '../queries/interactive-queries.ts';
import { publishEndpoint } from '../queries/endpoints.ts';
import { LoopWatch } from './loop-watch.ts';
import { InputSynchronizer } from '../loop/input-synchronizer.ts';
import { synchronizedInputs } from '../loop/synchronized-inputs.ts';
import { isRecordBatch } from '../../core/record-batch.ts';
import type { IncomingRecord, RecordCollector } from '../../core/records.ts';
import { ProcessingThread, type ThreadSpawner } from '../offload/processing-thread.ts';
import { forEachOutput, packRun } from '../offload/record-transfer.ts';
import type { RunResult } from '../offload/offloaded-tasks.ts';
export { LINEAGE } from '../../core/headers.ts';
export { CHAOS_PHASES, type ChaosPhase } from './faults.ts';
export type { WorkerEvent, WorkerStats } from './worker-events.ts';
export type { WorkerState } from './worker-state.ts';
export type { Transition, TransitionCount } from './state-machine.ts';

export interface WorkerOptions {
  /** Where the consumer, producer and admin client come from; the real clients by default. */
  readonly clients?: ClientSupplier;
  /** Called at each point of the protocol where the chaos harness may kill the process; a no-op by default. */
  readonly faults?: FaultHook;
  /**
   * The processing thread (offload/processing-thread.ts): how to start it, and the topology file it
   * loads. Without it (a topology built in-process), the main thread runs every stage.
   */
  readonly processingThread?: { readonly spawn: ThreadSpawner; readonly file: string };
}

/**
 * One worker: one consumer and one transactional producer (Kafka Streams' exactly_once_v2).
 * Records from a fetched batch run through the tasks inside an open transaction; outputs and
 * repartition records are produced without awaiting each, changelog records (and results a record
 * cache held back) once per key when the transaction is about to commit. The parts: the output's
 * transaction states (transaction/), the task manager, the record collector, partition progress,
 * the transaction driver (commit and recovery) and the rebalance handler. This file is the loop.
 *
 * Emits `event` (WorkerEvent, the public stream) and `transition` (every state move, for debug logs).
 */
export class Worker extends EventEmitter {
  readonly config: ResolvedWorkerConfig;
  readonly topology: RuntimeTopology;
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
    enforcedProcessing: 0,
    taskIdleMs: 0,
  };
  /** This host's lock on the instance id (instance-id.ts); undefined while a live process here holds it. */
  private instanceClaim: InstanceIdClaim | undefined;
  private readonly clients: ClientSupplier;
  private readonly context: RuntimeContext;
  private readonly lifecycle: StateMachine<WorkerState>;
  private readonly output: TransactionalOutput;
  private readonly progress = new PartitionProgress();
  private readonly tasks: TaskManager;
  private readonly collector: WorkerRecordCollector;
  private readonly transaction: TransactionDriver;
  private readonly rebalances: RebalanceHandler;
  private consumer: KafkaConsumer | undefined;
  private running: Promise<void> | undefined;
  private partitionsByTopic = new Map<string, number>();
  private transientFailures = 0;
  /**
   * The next batch, fetched while the loop processes the current one or waits on a commit, and what
   * was processed of it while a commit was in flight (speculation.ts).
   */
  private prefetched: Prefetch | undefined;
  private readonly globalTables: GlobalTableReader;
  /** Three transaction timeouts, at least 30 s: longer than any one Kafka call of the loop may take. */
  private readonly watch: LoopWatch;
  private readonly threadOption: WorkerOptions['processingThread'];
  private thread: ProcessingThread | undefined;
  /** The runs of each fetched batch handed to the processing thread, and what it made of them. */
  private readonly offloaded = new WeakMap<Message[], Offloaded>();
  /** Reads of the stores' committed state, here or (through the group) on the replica that owns a key. */
  readonly queries: InteractiveQueries;
  /** Holds back the records of tasks with several inputs until they may go in timestamp order. */
  private readonly synchronizer: InputSynchronizer;

  /** `topology`: a compiled topology (`compile(...)`), or the runtime's view of one. */
  constructor(topology: RuntimeTopology | (TaskPlan & Omit<RuntimeTopology, 'createTask'>), config: WorkerConfigInput, options: WorkerOptions = {}) {
    super();
    this.topology = 'createTask' in topology ? topology : runtimeTopology(topology);
    const parsed = parseWorkerConfig({ ...config, appId: config.appId ?? topology.appId });
    this.instanceClaim = parsed.instanceId === undefined ? claimDefaultInstanceId(parsed) : lockInstanceId({ ...parsed, instanceId: parsed.instanceId });
    this.config = { ...parsed, instanceId: parsed.instanceId ?? this.instanceClaim!.instanceId };
    this.clients = options.clients ?? kafkaClients;
    this.threadOption = options.processingThread;
    const onTransition = (t: Transition): void => void this.emit('transition', t);
    this.lifecycle = new StateMachine('worker', 'CREATED', WORKER_TRANSITIONS, onTransition);
    this.watch = new LoopWatch(Math.max(30_000, 3 * this.config.transactionTimeoutMs), (stall) => this.emit('event', { type: 'loop-stalled', ...stall } satisfies WorkerEvent));
    const txnId = transactionalId(this.config);
    const context: RuntimeContext = (this.context = {
      config: this.config,
      transactionalId: txnId,
      stats: this.stats,
      clients: this.clients,
      faults: options.faults ?? noFaults,
      emit: (e) => void this.emit('event', e),
      clientConfig: () => ({ 'bootstrap.servers': this.config.bootstrap, 'client.id': txnId, ...this.config.kafka }),
      consumer: () => this.consumer,
      step: (name) => this.watch.enter(name),
    });
    const Output = this.config.guarantee === 'exactly_once' ? ExactlyOnceOutput : AtLeastOnceOutput;
    this.output = new Output({
      clientConfig: context.clientConfig(),
      transactionalId: txnId,
      appId: this.config.appId,
      transactionTimeoutMs: this.config.transactionTimeoutMs,
      unsafeCommitOffsetsOutsideTransaction: this.config.unsafeCommitOffsetsOutsideTransaction,
      clients: this.clients,
      faults: context.faults,
      onTransition,
      onRetry: (call, attempt, error) => context.emit({ type: 'producer-retry', call, attempt, reason: describeKafkaError(error) }),
      onStep: (step) => this.watch.enter(step),
    });
    const deadLetterTopics = new Set(topology.topics.filter((t) => t.kind === 'dead-letter').map((t) => t.name));
    this.globalTables = new GlobalTableReader(this.topology.globalTables ?? [], (config) => this.clients.consumer(config));
    this.tasks = new TaskManager(this.topology, context, this.globalTables.rowsOf);
    const repartitionTopics = new Set(topology.topics.filter((t) => t.kind === 'repartition').map((t) => t.name));
    this.collector = new WorkerRecordCollector(context, this.output, deadLetterTopics, repartitionTopics, (topic) => this.partitionCount(topic));
    this.transaction = new TransactionDriver(context, this.output, this.tasks, this.progress, this.collector, this.guardOptions());
    this.queries = new InteractiveQueries({
      appId: this.config.appId,
      stores: this.topology.stores ?? new Map(),
      tasks: this.tasks,
      sourceTopicsOf: (sub) => this.topology.subtopologies.find((s) => s.id === sub)?.sourceTopics ?? [],
      partitionCount: (topic) => this.partitionCount(topic),
      connection: { bootstrap: this.config.bootstrap, kafka: this.config.kafka, withAdmin: this.clients.withAdmin },
      clientId: () => this.consumerClientId,
      advertisedUrl: this.config.advertisedUrl,
    });
    this.synchronizer = new InputSynchronizer(
      synchronizedInputs(this.topology, this.tasks, this.progress, () => this.consumer),
      this.config.maxTaskIdleMs,
      (enforced) => {
        this.stats.enforcedProcessing++;
        this.emit('event', { type: 'enforced-processing', ...enforced } satisfies WorkerEvent);
      },
      (idleMs) => (this.stats.taskIdleMs += idleMs),
    );
    this.rebalances = new RebalanceHandler(context, this.tasks, this.progress, this.transaction, () => this.lifecycle.is('STOPPED', 'FAILED'));
  }

  /** The client id the group lists this worker's consumer under. */
  private get consumerClientId(): string {
    return String(this.context.clientConfig()['client.id']);
  }

  get transactionalId(): string {
    return transactionalId(this.config);
  }

  get state(): WorkerState {
    return this.lifecycle.state;
  }

  /** Moves of the worker's lifecycle and of its producer's transaction states since it was created. */
  transitionCounts(): TransitionCount[] {
    return [...this.lifecycle.countRows(), ...this.output.transitionCounts()];
  }

  /** Creates internal topics, checks sources, prepares serdes, connects, and starts the loop. */
  async start(): Promise<void> {
    this.lifecycle.require('start', ['CREATED', 'PENDING_SHUTDOWN']);
    if (this.lifecycle.is('CREATED')) this.lifecycle.to('STARTING', 'start');
    try {
      await this.connectAndRun();
    } catch (e) {
      this.lifecycle.to('FAILED', 'start');
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
    await this.tasks.loadStateStore();
    // One admin client for both: short-lived admin clients have been seen to crash the process on teardown (admin.ts).
    this.partitionsByTopic = await this.clients.withAdmin(
      this.config.bootstrap,
      async (admin) => {
        const partitions = await prepareTopics(admin, this.topology, this.context);
        // Before this worker's producer exists: its initTransactions would fence a live namesake mid-work.
        await refuseLiveNamesake(admin, {
          ...this.guardOptions(),
          sessionTimeoutMs: this.config.sessionTimeoutMs,
          claimLocal: () => (this.instanceClaim ??= lockInstanceId(this.config)) !== undefined,
          stopping: () => this.lifecycle.is('PENDING_SHUTDOWN'),
        });
        return partitions;
      },
      this.config.kafka,
    );
    if (this.config.advertisedUrl !== undefined) {
      await publishEndpoint({ bootstrap: this.config.bootstrap, kafka: this.config.kafka, withAdmin: this.clients.withAdmin }, this.config.appId, {
        clientId: this.consumerClientId,
        instanceId: this.config.instanceId,
        url: this.config.advertisedUrl,
      });
    }
    await this.learnRecordLimits();
    for (const { serde, ctx } of this.topology.serdeUsages()) {
      await serde.prepare?.(ctx, { registryUrl: this.config.registryUrl });
    }
    // After the main thread's prepare: a registry that cannot be reached fails the start there, once.
    await this.startProcessingThread();
    await this.globalTables.load({ ...this.context.clientConfig(), 'group.id': this.config.appId }, this.partitionsByTopic);
    await this.output.connect();
    this.consumer = await this.clients.consumer(consumerConfig(this.context.clientConfig(), this.config, this.rebalances.onRebalance, (this.topology.copartitionGroups?.length ?? 0) > 0));
    this.consumer.setDefaultConsumeTimeout(50);
    // Otherwise consume(n) waits up to the timeout for each further message: under a trickle a batch,
    // and the transaction with it, would stay open for seconds.
    (this.consumer as unknown as { setDefaultIsTimeoutOnlyForFirstMessage(v: boolean): void }).setDefaultIsTimeoutOnlyForFirstMessage(true);
    this.consumer.subscribe([...new Set(this.topology.subtopologies.flatMap((s) => s.sourceTopics))]);
    this.emit('event', { type: 'started', transactionalId: this.transactionalId } satisfies WorkerEvent);
    if (this.lifecycle.is('STARTING')) this.lifecycle.to('RUNNING', 'start');
    this.watch.start();
    this.running = this.loop();
    this.running.catch(() => undefined);
  }

  /**
   * Learns each produced topic's max.message.bytes, so that a record over it is dead-lettered where it
   * is built instead of the broker refusing its batch, and the transaction with it, on every replay.
   * Not learnt (a secured listener, no answer), the producer's limit alone is checked, and a topic
   * that keeps refusing batches stops the worker (transaction/driver.ts).
   */
  private async learnRecordLimits(): Promise<void> {
    const produced = [...new Set(this.topology.topics.filter((t) => t.kind !== 'source').map((t) => t.name))];
    const messageMaxBytes = producerMessageMaxBytes(this.config.kafka);
    let topics: ReadonlyMap<string, number> = new Map();
    let unknown: string | undefined;
    try {
      if (this.clients.topicMaxMessageBytes === undefined) unknown = 'the client supplier cannot describe topic configs';
      else topics = await this.clients.topicMaxMessageBytes(this.config.bootstrap, produced, this.config.kafka);
      if (unknown === undefined && topics.size === 0 && produced.length > 0) unknown = `not described (security.protocol ${String(this.config.kafka['security.protocol'])})`;
    } catch (e) {
      unknown = e instanceof Error ? e.message : String(e);
    }
    const limits = new RecordSizeLimits(messageMaxBytes, topics);
    this.tasks.recordLimits = limits;
    // librdkafka fills a batch up to batch.size whatever the topic: several records each under a
    // topic's limit would still make a batch over it.
    const tightest = Math.min(...produced.map((t) => limits.maxRecordBytes(t)));
    if (Number.isFinite(tightest)) this.output.limitBatchBytes(tightest);
    this.emit('event', { type: 'record-limits', messageMaxBytes, topicMaxMessageBytes: Object.fromEntries(topics), ...(unknown === undefined ? {} : { unknown }) } satisfies WorkerEvent);
  }

  /** Starts the processing thread when the topology has sub-topologies it can run; the main thread runs every stage otherwise. */
  private async startProcessingThread(): Promise<void> {
    const option = this.threadOption;
    if (option === undefined || !this.config.processingThread) return;
    const limits = this.tasks.recordLimits;
    const started = await ProcessingThread.start(
      option.spawn,
      { file: option.file, appId: this.config.appId, registryUrl: this.config.registryUrl, messageMaxBytes: limits.messageMaxBytes, topicMaxMessageBytes: limits.topicLimits() },
      this.topology.subtopologies.map((s) => s.sourceTopics),
    );
    if (typeof started === 'string') {
      this.emit('event', { type: 'processing-thread', subtopologies: [], off: started } satisfies WorkerEvent);
      return;
    }
    this.thread = started;
    this.emit('event', { type: 'processing-thread', subtopologies: [...started.offloadable] } satisfies WorkerEvent);
  }

  /**
   * Hands the batch's runs of stateless tasks the processing thread can run to it, as soon as the batch
   * is fetched: the thread works on them while the main thread still produces the previous batch's outputs.
   */
  private offload(messages: Message[]): void {
    const thread = this.thread;
    if (thread === undefined || !thread.alive || messages.length === 0) return;
    const requests: Parameters<ProcessingThread['process']>[0][number][] = [];
    const entries: OffloadedRun[] = [];
    for (const run of new TimeOrderedBatch(messages).runs) {
      const task = this.tasks.taskFor(run.key);
      if (task?.stateless !== true || task.subtopology === undefined || !thread.offloadable.has(task.subtopology)) continue;
      // A repartition topic's record batch is one offset for many records: the main thread unpacks those.
      if (run.messages.some((m) => isRecordBatch(m.headers))) continue;
      const records = run.messages.map((m) => this.collector.incoming(m));
      requests.push({ subtopology: task.subtopology, run: packRun(run.topic, run.partition, records), streamTime: task.streamTime ?? Number.NEGATIVE_INFINITY });
      entries.push({ key: run.key, records });
    }
    if (entries.length === 0) return;
    this.offloaded.set(messages, { entries, keys: new Set(entries.map((e) => e.key)), results: thread.process(requests) });
  }

  /**
   * Sends what the processing thread made of the batch's offloaded runs into the open transaction, with
   * their offsets, as processing them here would have (the same checks decide whether a run is
   * processed at all). Returns, per run, how many of its records are done (the main thread processes
   * the rest: a record whose stage threw on the thread, and those after it), or false when the loop
   * must let go of the batch (a commit it made failed, or the worker is stopping).
   */
  private async applyOffloaded(batch: Message[]): Promise<ReadonlyMap<string, number> | false> {
    const offloaded = this.offloaded.get(batch);
    const done = new Map<string, number>();
    if (offloaded === undefined) return done;
    this.offloaded.delete(batch);
    const results = await offloaded.results;
    if (results === undefined) {
      // Said once, by the first batch the dead thread left to the main thread.
      if (this.thread !== undefined) this.emit('event', { type: 'processing-thread', subtopologies: [], off: this.thread.failure ?? 'stopped', failed: true } satisfies WorkerEvent);
      this.thread = undefined;
      return done;
    }
    for (let i = 0; i < offloaded.entries.length; i++) {
      const { key, records } = offloaded.entries[i]!;
      const result: RunResult = results[i]!;
      const task = this.tasks.taskFor(key);
      if (task?.stateless !== true || !this.progress.mayProcess(key)) continue;
      done.set(key, result.processed);
      if (result.processed === 0) continue;
      if (!this.transaction.open) await this.transaction.ensureOpen();
      let current = -1;
      let sink: RecordCollector | undefined;
      forEachOutput(result.outputs, (output, input) => {
        if (input !== current) sink = this.collector.sinkFor(records[(current = input)]!);
        sink!.send(output);
      });
      const first = records[0]!;
      this.transaction.processed({ key, topic: first.topic, partition: first.partition }, records[result.processed - 1]!.offset, result.processed);
      this.collector.consumed(first.topic, result.processed);
      if (result.streamTime > (task.streamTime ?? Number.NEGATIVE_INFINITY)) await task.advanceStreamTime?.(result.streamTime, this.collector.sinkFor(records[result.processed - 1]!));
      if (this.transaction.mustCommit(0)) {
        const epoch = this.progress.epoch;
        await this.transaction.commit();
        if (this.progress.epoch !== epoch || !this.lifecycle.is(...LOOPING)) return false;
        await this.transaction.ensureOpen();
      }
    }
    return done;
  }

  private guardOptions(): InstanceGuardOptions {
    return { bootstrap: this.config.bootstrap, groupId: this.config.appId, transactionalId: this.transactionalId, kafka: this.config.kafka, withAdmin: this.clients.withAdmin };
  }

  /** Resolves when the loop ends: after stop(), or rejects on an unrecoverable error. */
  done(): Promise<void> {
    return this.running ?? Promise.resolve();
  }

  /** Finishes and commits the open transaction, leaves the group, and closes both clients. */
  async stop(): Promise<void> {
    if (this.lifecycle.is('CREATED', 'STARTING', ...LOOPING)) this.lifecycle.to('PENDING_SHUTDOWN', 'stop');
    await this.running?.catch(() => undefined);
  }

  private async loop(): Promise<void> {
    const consumer = this.consumer;
    if (!consumer) throw new IllegalTransitionError('worker', this.state, 'loop');
    let clean = false;
    try {
      while (this.lifecycle.is(...LOOPING)) {
        // The consume call a commit started ends first: nothing else may act on the consumer meanwhile.
        this.watch.enter('end-prefetch');
        const prefetched = await this.endPrefetch();
        if (this.rebalances.pending) await this.rebalance();
        this.watch.enter('global-tables');
        await this.globalTables.poll();
        if (this.progress.unsettled.size > 0) await this.transaction.settlePartitions();
        let batch: Message[];
        let ready: readonly Message[];
        let speculation: Speculation | undefined;
        try {
          this.watch.enter(prefetched === undefined ? 'consume' : 'keep-prefetched');
          batch = prefetched === undefined ? await this.fetch(consumer) : await this.keepPrefetched(prefetched);
          if (prefetched !== undefined && batch.length > 0) speculation = this.adoptable(await prefetched.speculation);
          // Before the next consume call starts: it moves the positions the synchronizer reads lag from.
          ready = this.synchronizer.admit(batch);
          if (batch.length > 0) this.prefetch(consumer);
        } catch (e) {
          this.emit('event', { type: 'aborted', reason: `consume failed: ${describeKafkaError(e)}` } satisfies WorkerEvent);
          await sleep(100);
          continue;
        }
        if (batch.length > 0 || ready.length > 0) {
          try {
            this.watch.enter('process');
            await this.processBatch(batch, ready, speculation);
          } catch (e) {
            if (isTransientError(e)) {
              // Not the record's fault (e.g. the schema registry is down): drop this attempt whole and read again.
              await this.transaction.abort(`transient failure, retrying: ${describeKafkaError(e)}`);
              await sleep(Math.min(5_000, 250 * 2 ** Math.min(this.transientFailures++, 5)));
              continue;
            }
            if (e instanceof RecordTooLargeError) throw this.transaction.deadLetterRefused(e);
            if (!isKafkaError(e)) throw e;
            await this.transaction.failed(e);
            continue;
          }
          this.transientFailures = 0;
        }
        try {
          this.watch.enter('punctuate');
          await this.punctuate();
        } catch (e) {
          if (e instanceof RecordTooLargeError) throw this.transaction.deadLetterRefused(e);
          if (!isKafkaError(e)) throw e;
          await this.transaction.failed(e);
          continue;
        }
        if (this.transaction.due()) {
          this.watch.enter('commit');
          await this.commitWhileFetching(consumer);
        }
      }
      this.watch.enter('final commit');
      if (this.transaction.open) await this.transaction.commit();
      clean = true;
    } finally {
      this.lifecycle.to(clean ? 'STOPPED' : 'FAILED', 'loop');
      this.watch.enter('close');
      await this.close(clean);
      this.watch.stop();
    }
  }

  /**
   * Commits while the consumer fetches the next batch: the loop would otherwise sit idle through the
   * commit's round trips (offsets to the group coordinator, EndTxn and its markers) and then wait for
   * the fetch. The batch is only read once the commit is done, so nothing of it joins this transaction.
   */
  private async commitWhileFetching(consumer: KafkaConsumer): Promise<void> {
    const { batch, epoch, rebalances } = this.prefetch(consumer);
    let committed = false;
    const committing = this.transaction.commit().finally(() => (committed = true));
    const speculation = this.speculate(batch, new Speculation(epoch, rebalances), () => committed);
    // A failure while speculating drops the speculation: the batch is then processed as usual, and fails there.
    this.prefetched = { batch, epoch, rebalances, speculation: speculation.catch(() => undefined) };
    await committing;
  }

  /**
   * Starts fetching the next batch unless a fetch is under way: librdkafka's consume call runs off the
   * main thread, and waiting for it after each batch left the loop idle for a fifth of its time. Not
   * while a partition is unsettled: its seek, before the next fetch, would drop this batch (rule 1 of
   * partition-progress.ts), and the loop has no use for records it must read again.
   */
  private prefetch(consumer: KafkaConsumer): Prefetch {
    if (this.prefetched !== undefined) return this.prefetched;
    const batch = this.progress.unsettled.size > 0 ? Promise.resolve([]) : this.fetch(consumer);
    // Read (and its failure handled) by the loop, or awaited by close.
    batch.catch(() => undefined);
    this.prefetched = { batch, epoch: this.progress.epoch, rebalances: this.stats.rebalances, speculation: Promise.resolve(undefined) };
    return this.prefetched;
  }

  /** The next batch from the consumer, its offloadable runs already on their way to the processing thread. */
  private async fetch(consumer: KafkaConsumer): Promise<Message[]> {
    const messages = await consumeBatchOrEmpty(consumer, this.config.consumeBatchSize);
    this.offload(messages);
    return messages;
  }

  /**
   * Runs the stateless tasks' records of the batch while the commit is in flight, their outputs kept
   * in `speculation` (speculation.ts). Yields between partitions so that the commit's own steps go on.
   */
  private async speculate(fetched: Promise<Message[]>, speculation: Speculation, committed: () => boolean): Promise<Speculation | undefined> {
    const messages = await fetched.catch(() => []);
    if (messages.length === 0 || committed()) return undefined;
    // A stateless task's records need no event-time order across partitions (nothing they do depends on
    // another partition's): each partition's run goes through whole, in its own order.
    const offloaded = this.offloaded.get(messages)?.keys;
    for (const run of new TimeOrderedBatch(messages).runs) {
      const task = this.tasks.taskFor(run.key);
      if (task?.stateless !== true || !this.progress.mayProcess(run.key) || offloaded?.has(run.key) === true) continue;
      let records = 0;
      for (let i = 0; i < run.messages.length; i++) {
        const message = run.messages[i]!;
        for (const record of this.collector.batched(message) ?? [this.collector.incoming(message)]) {
          records++;
          const result = task.process(record, speculation.aim(record));
          if (result) await result;
        }
      }
      speculation.partitions.add(run.key);
      speculation.processed.push({ run, lastOffset: run.messages[run.messages.length - 1]!.offset, records });
      await new Promise(setImmediate);
    }
    return speculation.partitions.size > 0 ? speculation : undefined;
  }

  /** A speculation the loop may take over: the commit it overlapped landed and nothing moved since the batch was fetched. */
  private adoptable(speculation: Speculation | undefined): Speculation | undefined {
    if (speculation === undefined) return undefined;
    const unchanged = speculation.epoch === this.progress.epoch && speculation.rebalances === this.stats.rebalances && !this.transaction.open;
    return unchanged && this.lifecycle.is(...LOOPING) ? speculation : undefined;
  }

  /** The prefetched batch once its consume call, and the speculation over it, ended; a failed call throws here, where a failed fetch is handled. */
  private async endPrefetch(): Promise<Prefetch | undefined> {
    const prefetched = this.prefetched;
    this.prefetched = undefined;
    if (prefetched !== undefined) {
      await prefetched.batch.catch(() => undefined);
      await prefetched.speculation;
    }
    return prefetched;
  }

  /**
   * The prefetched batch if nothing moved since it was fetched. A commit that failed rewound the
   * partitions, a rebalance reassigned them, a seek settled one: records fetched before any of these
   * may lie behind the positions now in force, so that batch is dropped, and since fetching it moved
   * every owned partition's position on, each is sought back to its committed offset (rules 1–3 of
   * partition-progress.ts) before the next fetch.
   */
  private async keepPrefetched(prefetched: Prefetch): Promise<Message[]> {
    if (prefetched.epoch === this.progress.epoch) return prefetched.batch;
    // Unsettling forgets the open transaction's offsets: what it processed commits first, so that the
    // seek back to the committed offsets does not read those records into it a second time.
    if (this.transaction.open) await this.transaction.commit();
    this.progress.unsettle(this.tasks.ownedPartitions());
    return [];
  }

  private async rebalance(): Promise<void> {
    this.watch.enter('rebalance');
    this.lifecycle.to('REBALANCING', 'rebalance');
    try {
      await this.rebalances.handle();
    } finally {
      if (this.lifecycle.is('REBALANCING')) this.lifecycle.to('RUNNING', 'rebalance');
    }
  }

  /**
   * The batch in event-time order across its partitions (batch-order.ts), each partition's stretch at a
   * time. `ready`: what of it (and of records held back before) the input synchronizer lets go now.
   */
  private async processBatch(batch: Message[], ready: readonly Message[], speculation: Speculation | undefined): Promise<void> {
    if (speculation !== undefined) {
      if (!this.transaction.open) await this.transaction.ensureOpen();
      this.collector.sendSpeculated(speculation);
      for (const { run, lastOffset, records } of speculation.processed) {
        this.transaction.processed(run, lastOffset, records);
        this.collector.consumed(run.topic, records);
      }
    }
    const offloaded = await this.applyOffloaded(batch);
    if (offloaded === false) return;
    const ordered = new TimeOrderedBatch(ready);
    for (let slice = ordered.next(); slice !== undefined; slice = ordered.next()) {
      const { run, to } = slice;
      if (speculation?.partitions.has(run.key) === true) continue;
      // Records the processing thread processed are done; the main thread takes over from the first it did not.
      const from = Math.max(slice.from, offloaded.get(run.key) ?? 0);
      if (from >= to) continue;
      const task = this.tasks.taskFor(run.key);
      // A record of a partition revoked after the fetch (its next owner reads it), or of one whose
      // position is not yet back at its committed offset (it is read again once it is).
      if (!task || !this.progress.mayProcess(run.key)) continue;
      if (!this.transaction.open) await this.transaction.ensureOpen();
      const messages = run.messages;
      let records = 0;
      for (let i = from; i < to; i++) {
        const message = messages[i]!;
        const batched = this.collector.batched(message);
        if (batched === undefined) {
          records++;
          const record = this.collector.incoming(message);
          const result = task.process(record, this.collector.sinkFor(record));
          if (result) await result;
        } else {
          // A batch is one offset: all of its records are processed in this transaction, or none.
          records += batched.length;
          for (const record of batched) {
            const result = task.process(record, this.collector.sinkFor(record));
            if (result) await result;
          }
        }
        if (i + 1 < to && this.transaction.mustCommit(records)) {
          this.transaction.processed(run, message.offset, records);
          this.collector.consumed(run.topic, records);
          records = 0;
          const epoch = this.progress.epoch;
          await this.transaction.commit();
          // A failed commit rewound the partitions: the rest of the batch is fetched again from the committed offsets.
          if (this.progress.epoch !== epoch || !this.lifecycle.is(...LOOPING)) return;
          await this.transaction.ensureOpen();
        }
      }
      // Once per slice: a failure inside it aborts the transaction, and these offsets with it.
      this.transaction.processed(run, messages[to - 1]!.offset, records);
      this.collector.consumed(run.topic, records);
    }
  }

  /**
   * Runs the wall-clock punctuations now due, in the open transaction (opened for them if need be), so
   * that what they emit and write commits or aborts with it, like what records cause.
   */
  private async punctuate(): Promise<void> {
    const now = Date.now();
    const due = this.tasks.wallClockDue(now);
    if (due.length === 0) return;
    if (!this.transaction.open) await this.transaction.ensureOpen();
    for (const task of due) {
      // Every output of a punctuation is sent with its origin (a record of its own), as released results are.
      const result = task.punctuateWallClock?.(now, this.collector.commitCollector);
      if (result) await result;
    }
  }

  /** `clean`: the loop ended after its last commit, not on an error, so local state matches the changelog. */
  private async close(clean: boolean): Promise<void> {
    const consumer = this.consumer;
    // A consume call still in flight must end before its consumer is disconnected.
    await this.prefetched?.batch.catch(() => undefined);
    await this.prefetched?.speculation;
    this.prefetched = undefined;
    await this.thread?.close();
    this.thread = undefined;
    await this.tasks.closeAll(clean);
    if (consumer) await disconnect(consumer, this.config.shutdownTimeoutMs);
    await this.globalTables.close();
    await this.transaction.close();
    await this.output.close();
    this.consumer = undefined;
    this.instanceClaim?.release();
    this.emit('event', { type: 'stopped', state: clean ? 'STOPPED' : 'FAILED' } satisfies WorkerEvent);
  }

  topicRecords(): TopicRecordCount[] {
    return this.collector.topicRecords();
  }

  /** Lag of each owned source partition, from the client's cached end offsets (no broker round trip). */
  partitionLag(): PartitionLag[] {
    return this.consumer ? partitionLag(this.consumer, this.tasks.ownedPartitions(), this.progress) : [];
  }

  /** Per join stage, stream records that found no row in the table (committed transactions). */
  joinMisses(): ReadonlyMap<string, number> {
    return this.tasks.joinMisses;
  }

  /** Tasks waiting for one of their inputs now: the input, and for how long. */
  waitingTasks(): readonly { readonly task: string; readonly partition: string; readonly forMs: number }[] {
    return this.synchronizer.waitingTasks();
  }

  /** Partition counts of every topic the application uses, once started. */
  partitionCount(topic: string): number | undefined {
    return this.partitionsByTopic.get(topic);
  }
}

/** A partition's records handed to the processing thread, kept to send its outputs with their origins. */
interface OffloadedRun {
  readonly key: string;
  readonly records: readonly IncomingRecord[];
}

interface Offloaded {
  readonly entries: readonly OffloadedRun[];
  readonly keys: ReadonlySet<string>;
  /** In the order of `entries`; undefined when the thread could not process them. */
  readonly results: Promise<readonly RunResult[] | undefined>;
}

interface Prefetch {
  readonly batch: Promise<Message[]>;
  /** The partition epoch the batch was fetched under. */
  readonly epoch: number;
  /** Rebalances the worker had handled when the fetch started. */
  readonly rebalances: number;
  readonly speculation: Promise<Speculation | undefined>;
}

function consumeBatchOrEmpty(consumer: KafkaConsumer, max: number): Promise<Message[]> {
  return new Promise((resolve, reject) =>
    consumer.consume(max, (err, messages) => {
      if (err && !isEmptyFetch(err)) reject(err);
      else resolve(messages ?? []);
    }),
  );
}
