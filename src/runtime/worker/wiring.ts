// How a worker's parts are put together: which part hears of which, and through what. worker.ts holds
// them; none of them knows the worker.
import type { KafkaConsumer } from '@confluentinc/kafka-javascript';
import { GlobalTableReader } from '../global-tables/global-table-reader.ts';
import { InputSynchronizer } from '../loop/input-synchronizer.ts';
import { PartitionProgress, partitionKey } from '../base/partition-progress.ts';
import { RebalanceHandler } from '../loop/rebalance.ts';
import { WorkerRecordCollector } from '../transaction/record-collector.ts';
import { synchronizedInputs } from '../loop/synchronized-inputs.ts';
import { InteractiveQueries } from '../queries/interactive-queries.ts';
import { TaskManager } from '../task/task-manager.ts';
import type { RuntimeTopology } from '../task/worker-topology.ts';
import { AtLeastOnceOutput } from '../transaction/at-least-once.ts';
import { TransactionDriver } from '../transaction/driver.ts';
import { ExactlyOnceOutput } from '../transaction/exactly-once.ts';
import { describeKafkaError } from '../transaction/kafka-errors.ts';
import type { TransactionalOutput } from '../transaction/output.ts';
import type { InstanceGuardOptions } from '../transaction/instance-guard.ts';
import type { LoopWatch } from '../loop/loop-watch.ts';
import type { WorkerServices } from '../base/worker-services.ts';
import type { Transition, WorkerEvent, WorkerStats } from '../base/worker-events.ts';
import type { ResolvedWorkerConfig } from '../base/config.ts';
import { Loop } from '../loop/loop.ts';
import type { ThreadPool } from '../offload/thread-pool.ts';
import { StandbyTasks } from '../standby/standby-tasks.ts';

export interface WorkerParts {
  readonly output: TransactionalOutput;
  readonly progress: PartitionProgress;
  readonly globalTables: GlobalTableReader;
  readonly tasks: TaskManager;
  readonly collector: WorkerRecordCollector;
  readonly transaction: TransactionDriver;
  readonly queries: InteractiveQueries;
  readonly synchronizer: InputSynchronizer;
  readonly rebalances: RebalanceHandler;
  /** With standbyReplicas and persistent stores: the warm copies this replica keeps of others' tasks. */
  readonly standby: StandbyTasks | undefined;
}

export interface WiringInput {
  readonly topology: RuntimeTopology;
  readonly services: WorkerServices;
  readonly watch: LoopWatch;
  readonly guard: InstanceGuardOptions;
  readonly onTransition: (t: Transition) => void;
  /** Partition counts are known once the worker has started. */
  readonly partitionCount: (topic: string) => number | undefined;
  readonly consumer: () => KafkaConsumer | undefined;
  readonly consumerClientId: () => string;
  /** The worker stopped or failed: a rebalance callback arriving now has nothing to hand over. */
  readonly stopped: () => boolean;
}

export function wireWorker({ topology, services, watch, guard, onTransition, partitionCount, consumer, consumerClientId, stopped }: WiringInput): WorkerParts {
  const { config, clients, stats } = services;
  const Output = config.guarantee === 'exactly_once' ? ExactlyOnceOutput : AtLeastOnceOutput;
  const output = new Output({
    clientConfig: services.clientConfig(),
    transactionalId: services.transactionalId,
    appId: config.appId,
    transactionTimeoutMs: config.transactionTimeoutMs,
    unsafeCommitOffsetsOutsideTransaction: config.unsafeCommitOffsetsOutsideTransaction,
    clients,
    faults: services.faults,
    onTransition,
    onRetry: (call, attempt, error) => services.emit({ type: 'producer-retry', call, attempt, reason: describeKafkaError(error) }),
    onStep: (step) => watch.enter(step),
  });
  const progress = new PartitionProgress();
  const topicsOf = (kind: string): Set<string> => new Set(topology.topics.filter((t) => t.kind === kind).map((t) => t.name));
  const globalTables = new GlobalTableReader(topology.globalTables ?? [], (consumerConfig) => clients.consumer(consumerConfig));
  const tasks = new TaskManager(topology, services, globalTables.rowsOf, (topic, partition) => progress.committed.get(partitionKey(topic, partition)));
  const collector = new WorkerRecordCollector(services, output, topicsOf('dead-letter'), topicsOf('repartition'), partitionCount);
  const transaction = new TransactionDriver(services, output, tasks, progress, collector, guard);
  const standby = config.standbyReplicas > 0 && config.stateStore === 'persistent' ? new StandbyTasks({ topology, services, owns: (sub, partition) => tasks.taskOf(sub, partition) !== undefined }) : undefined;
  const queries = new InteractiveQueries({
    appId: config.appId,
    stores: topology.stores ?? new Map(),
    tasks,
    sourceTopicsOf: (sub) => topology.subtopologies.find((s) => s.id === sub)?.sourceTopics ?? [],
    partitionCount,
    connection: { bootstrap: config.bootstrap, kafka: config.kafka, withAdmin: clients.withAdmin },
    clientId: consumerClientId,
    advertisedUrl: config.advertisedUrl,
    queryToken: config.queryToken,
    ...(standby ? { standbyReader: (sub: number, partition: number, store: string) => standby.reader(sub, partition, store) } : {}),
  });
  const synchronizer = new InputSynchronizer(
    synchronizedInputs(topology, tasks, progress, consumer),
    config.maxTaskIdleMs,
    (enforced) => {
      stats.enforcedProcessing++;
      services.emit({ type: 'enforced-processing', ...enforced });
    },
    (idleMs) => (stats.taskIdleMs += idleMs),
  );
  const rebalances = new RebalanceHandler(services, tasks, progress, transaction, stopped, standby?.needed === true ? standby : undefined);
  return { output, progress, globalTables, tasks, collector, transaction, queries, synchronizer, rebalances, standby: standby?.needed === true ? standby : undefined };
}

/** What the loop needs beyond the parts: the consumer, the worker's state and its one way to rebalance. */
export interface LoopInput {
  readonly consumer: KafkaConsumer;
  readonly config: ResolvedWorkerConfig;
  readonly stats: WorkerStats;
  readonly watch: LoopWatch;
  readonly threads: ThreadPool | undefined;
  readonly emit: (event: WorkerEvent) => void;
  /** The worker is RUNNING or REBALANCING. */
  readonly looping: () => boolean;
  readonly rebalance: () => Promise<void>;
}

export function createLoop(parts: WorkerParts, { consumer, config, stats, watch, threads, emit, looping, rebalance }: LoopInput): Loop {
  const { tasks, collector, progress, transaction, synchronizer, rebalances, globalTables } = parts;
  return new Loop(
    {
      consumer,
      consumeBatchSize: config.consumeBatchSize,
      tasks,
      collector,
      progress,
      transaction,
      synchronizer,
      stats,
      emit,
      looping,
      watch,
      rebalancePending: () => rebalances.pending,
      rebalance,
      replaceLost: (why) => rebalances.replaceLost(why),
      pollGlobalTables: () => globalTables.poll(),
    },
    threads,
  );
}
