import { EventEmitter } from 'node:events';
import type { KafkaConsumer } from '@confluentinc/kafka-javascript';
import { disconnect } from '../../kafka/clients.ts';
import type { TaskPlan } from '../../graph/types.ts';
import { kafkaClients, type ClientSupplier, type LagLookup } from '../base/client-supplier.ts';
import { parseWorkerConfig, transactionalId, type ResolvedWorkerConfig, type WorkerConfigInput } from '../base/config.ts';
import { IllegalTransitionError } from '../base/errors.ts';
import { noFaults, type FaultHook } from '../base/faults.ts';
import { claimDefaultInstanceId, lockInstanceId, type InstanceIdClaim } from './instance-id.ts';
import type { InstanceGuardOptions } from '../transaction/instance-guard.ts';
import type { WorkerServices } from '../base/worker-services.ts';
import { StateMachine } from '../base/state-machine.ts';
import type { Transition, TransitionCount } from '../base/worker-events.ts';
import { runtimeTopology, type RuntimeTopology } from '../task/worker-topology.ts';
import { newWorkerStats, type PartitionLag, type TopicRecordCount, type WorkerEvent, type WorkerStats } from '../base/worker-events.ts';
import { LOOPING, WORKER_TRANSITIONS, type WorkerState } from './worker-state.ts';
import { consumerConfig, partitionLag } from './worker-setup.ts';
import { prepareGroupProtocol } from './group-protocol.ts';
import type { BatchSource } from '../loop/batch-source.ts';
import { checkRetryBudget, learnRecordLimits, prepareCluster, prepareSerdes, startProcessingThreads, subscribedConsumer } from './startup.ts';
import type { InteractiveQueries } from '../queries/interactive-queries.ts';
import { LoopWatch } from '../loop/loop-watch.ts';
import { createLoop, wireWorker, type WorkerParts } from './wiring.ts';
import type { ThreadSpawner } from '../offload/processing-thread.ts';
import type { ThreadPool } from '../offload/thread-pool.ts';

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
  /**
   * Stores whose state may be dropped for a topology change the start check finds (`run --reset-state`):
   * only a change that needs it resets one (worker/upgrade-guard.ts).
   */
  readonly resetStores?: readonly string[];
}

/**
 * One worker: one consumer and one transactional producer (Kafka Streams' exactly_once_v2).
 * Records from a fetched batch run through the tasks inside an open transaction; outputs and
 * repartition records are produced without awaiting each, changelog records (and results a record
 * cache held back) once per key when the transaction is about to commit. This file is the façade:
 * the lifecycle (start, stop, close) and what observability reads. The parts and how they are wired:
 * wiring.ts; the start-up steps: startup.ts; the loop: loop/loop.ts, which takes each batch from the
 * batch source (loop/batch-source.ts) through the record path (loop/record-path.ts).
 *
 * Emits `event` (WorkerEvent, the public stream) and `transition` (every state move, for debug logs).
 */
export class Worker extends EventEmitter {
  readonly config: ResolvedWorkerConfig;
  readonly topology: RuntimeTopology;
  readonly stats: WorkerStats = newWorkerStats();
  /** This host's lock on the instance id (instance-id.ts); undefined while a live process here holds it. */
  private instanceClaim: InstanceIdClaim | undefined;
  private readonly clients: ClientSupplier;
  private lagLookup: LagLookup | undefined;
  private readonly services: WorkerServices;
  private readonly lifecycle: StateMachine<WorkerState>;
  /** The loop's parts, wired in wiring.ts. */
  private readonly parts: WorkerParts;
  private consumer: KafkaConsumer | undefined;
  private running: Promise<void> | undefined;
  private partitionsByTopic = new Map<string, number>();
  /** Where the loop's batches come from (prefetch, speculation, the processing thread), while it runs. */
  private source: BatchSource | undefined;
  /** Three transaction timeouts, at least 30 s: longer than any one Kafka call of the loop may take. */
  private readonly watch: LoopWatch;
  private readonly threadOption: WorkerOptions['processingThread'];
  private readonly resetStores: ReadonlySet<string>;
  private threads: ThreadPool | undefined;
  /** Reads of the stores' committed state, here or (through the group) on the replica that owns a key. */
  readonly queries: InteractiveQueries;

  /** `topology`: a compiled topology (`compile(...)`), or the runtime's view of one. */
  constructor(topology: RuntimeTopology | (TaskPlan & Omit<RuntimeTopology, 'createTask'>), config: WorkerConfigInput, options: WorkerOptions = {}) {
    super();
    this.topology = 'createTask' in topology ? topology : runtimeTopology(topology);
    const parsed = parseWorkerConfig({ ...config, appId: config.appId ?? topology.appId });
    this.instanceClaim = parsed.instanceId === undefined ? claimDefaultInstanceId(parsed) : lockInstanceId({ ...parsed, instanceId: parsed.instanceId });
    this.config = { ...parsed, instanceId: parsed.instanceId ?? this.instanceClaim!.instanceId };
    this.clients = options.clients ?? kafkaClients;
    this.threadOption = options.processingThread;
    this.resetStores = new Set(options.resetStores ?? []);
    const onTransition = (t: Transition): void => void this.emit('transition', t);
    this.lifecycle = new StateMachine('worker', 'CREATED', WORKER_TRANSITIONS, onTransition);
    this.watch = new LoopWatch(Math.max(30_000, 3 * this.config.transactionTimeoutMs), (stall) => this.emit('event', { type: 'loop-stalled', ...stall } satisfies WorkerEvent));
    const txnId = transactionalId(this.config);
    const services: WorkerServices = (this.services = {
      config: this.config,
      transactionalId: txnId,
      stats: this.stats,
      clients: this.clients,
      faults: options.faults ?? noFaults,
      emit: (e) => void this.emit('event', e),
      clientConfig: () => ({ 'bootstrap.servers': this.config.bootstrap, 'client.id': txnId, ...this.config.kafka }),
      consumer: () => this.consumer,
      step: (name) => this.watch.enter(name),
      tracer: null,
    });
    this.parts = wireWorker({
      topology: this.topology,
      services,
      watch: this.watch,
      guard: this.guardOptions(),
      onTransition,
      partitionCount: (topic) => this.partitionCount(topic),
      consumer: () => this.consumer,
      consumerClientId: () => this.consumerClientId,
      stopped: () => this.lifecycle.is('STOPPED', 'FAILED'),
    });
    this.queries = this.parts.queries;
  }

  /** The client id the group lists this worker's consumer under. */
  private get consumerClientId(): string {
    return String(this.services.clientConfig()['client.id']);
  }

  get transactionalId(): string {
    return transactionalId(this.config);
  }

  get state(): WorkerState {
    return this.lifecycle.state;
  }

  /** Moves of the worker's lifecycle and of its producer's transaction states since it was created. */
  transitionCounts(): TransitionCount[] {
    return [...this.lifecycle.countRows(), ...this.parts.output.transitionCounts()];
  }

  /** Creates internal topics, checks sources, prepares serdes, connects, and starts the loop. */
  async start(): Promise<void> {
    this.lifecycle.require('start', ['CREATED', 'PENDING_SHUTDOWN']);
    if (this.lifecycle.is('CREATED')) this.lifecycle.to('STARTING', 'start');
    try {
      await this.connectAndRun();
    } catch (e) {
      this.lifecycle.to('FAILED', 'start');
      // A worker that never ran gives its default instance id back to the next one in this process, and
      // its processing threads stop: a live thread would keep the process from exiting on the error.
      this.instanceClaim?.release();
      await this.threads?.close();
      this.threads = undefined;
      this.parts.tasks.useHost(undefined);
      await this.services.tracer?.shutdown();
      this.services.tracer = null;
      throw e;
    }
  }

  private async connectAndRun(): Promise<void> {
    const { tasks, output, globalTables, rebalances } = this.parts;
    const startup = { topology: this.topology, config: this.config, clients: this.clients, emit: (e: WorkerEvent) => void this.emit('event', e), resetStores: this.resetStores };
    checkRetryBudget(this.topology, this.config);
    await tasks.loadStateStore();
    this.partitionsByTopic = await prepareCluster(startup, this.services, {
      ...this.guardOptions(),
      sessionTimeoutMs: this.config.sessionTimeoutMs,
      claimLocal: () => (this.instanceClaim ??= lockInstanceId(this.config)) !== undefined,
      stopping: () => this.lifecycle.is('PENDING_SHUTDOWN'),
    });
    tasks.recordLimits = await learnRecordLimits(startup, output);
    await prepareSerdes(this.topology, this.config);
    const tracing = this.config.tracing;
    // Loaded only for a worker that traces: the SDK is an optional dependency.
    if (tracing !== undefined) this.services.tracer ??= await (await import('../../observability/tracing/start.ts')).startTracing(tracing, { name: this.config.appId, instanceId: this.config.instanceId });
    // After the main thread's prepare: a registry that cannot be reached fails the start there, once.
    this.threads = await startProcessingThreads(startup, this.threadOption, tasks.recordLimits, {
      stores: this.topology.stores ?? new Map(),
      collector: this.parts.collector,
      onLate: tasks.onLateNotice,
    });
    if (this.config.stateStore === 'memory') tasks.useHost(this.threads);
    await globalTables.load({ ...this.services.clientConfig(), 'group.id': this.config.appId }, this.partitionsByTopic);
    await output.connect();
    const protocol = await prepareGroupProtocol(this.config, (this.topology.copartitionGroups?.length ?? 0) > 0, this.clients, startup.emit);
    this.consumer = await subscribedConsumer(this.clients, this.topology, consumerConfig(this.services.clientConfig(), this.config, rebalances.onRebalance, protocol));
    await this.parts.standby?.start();
    this.emit('event', { type: 'started', transactionalId: this.transactionalId } satisfies WorkerEvent);
    if (this.lifecycle.is('STARTING')) this.lifecycle.to('RUNNING', 'start');
    this.watch.start();
    this.running = this.loop();
    this.running.catch(() => undefined);
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

  /** Runs the loop (loop/loop.ts) until the worker stops or fails, then closes every client. */
  private async loop(): Promise<void> {
    const consumer = this.consumer;
    if (!consumer) throw new IllegalTransitionError('worker', this.state, 'loop');
    const loop = createLoop(this.parts, {
      consumer,
      config: this.config,
      stats: this.stats,
      watch: this.watch,
      threads: this.threads,
      emit: (e) => void this.emit('event', e),
      looping: () => this.lifecycle.is(...LOOPING),
      rebalance: () => this.rebalance(),
    });
    this.source = loop.source;
    let clean = false;
    try {
      await loop.run();
      clean = true;
    } finally {
      this.lifecycle.to(clean ? 'STOPPED' : 'FAILED', 'loop');
      this.watch.enter('close');
      await this.close(clean);
      this.watch.stop();
    }
  }

  private async rebalance(): Promise<void> {
    this.watch.enter('rebalance');
    this.lifecycle.to('REBALANCING', 'rebalance');
    try {
      await this.parts.rebalances.handle();
    } finally {
      if (this.lifecycle.is('REBALANCING')) this.lifecycle.to('RUNNING', 'rebalance');
    }
  }

  /** `clean`: the loop ended after its last commit, not on an error, so local state matches the changelog. */
  private async close(clean: boolean): Promise<void> {
    const consumer = this.consumer;
    // A consume call still in flight must end before its consumer is disconnected.
    await (this.source?.close() ?? this.threads?.close());
    this.source = undefined;
    this.threads = undefined;
    this.parts.tasks.useHost(undefined);
    const { tasks, globalTables, transaction, output } = this.parts;
    await tasks.closeAll(clean);
    await this.parts.standby?.close();
    if (consumer) await disconnect(consumer, this.config.shutdownTimeoutMs);
    await globalTables.close();
    await transaction.close();
    await output.close();
    await this.services.tracer?.shutdown();
    this.services.tracer = null;
    this.consumer = undefined;
    await this.lagLookup?.close();
    this.lagLookup = undefined;
    this.instanceClaim?.release();
    this.emit('event', { type: 'stopped', state: clean ? 'STOPPED' : 'FAILED' } satisfies WorkerEvent);
  }

  topicRecords(): TopicRecordCount[] {
    return this.parts.collector.topicRecords();
  }

  /** Lag of each owned source partition, from the client's cached end offsets, as `onceflow status` counts it (kafka/lag.ts). */
  async partitionLag(): Promise<PartitionLag[]> {
    if (!this.consumer) return [];
    // Opened on the first scrape: a worker nobody scrapes keeps no extra connection.
    this.lagLookup ??= this.clients.readableProbe?.(this.config.bootstrap, this.config.kafka);
    return partitionLag(this.consumer, this.parts.tasks.ownedPartitions(), this.parts.progress, this.lagLookup);
  }

  /** Per join stage, stream records that found no row in the table (committed transactions). */
  joinMisses(): ReadonlyMap<string, number> {
    return this.parts.tasks.joinMisses;
  }

  /** Tasks waiting for one of their inputs now: the input, and for how long. */
  waitingTasks(): readonly { readonly task: string; readonly partition: string; readonly forMs: number }[] {
    return this.parts.synchronizer.waitingTasks();
  }

  /** Partition counts of every topic the application uses, once started. */
  partitionCount(topic: string): number | undefined {
    return this.partitionsByTopic.get(topic);
  }
}
