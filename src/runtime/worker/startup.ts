// Steps of a worker's start that need nothing of the loop: the retry budget against the transaction
// timeout, the topics and the group as the cluster has them, what one record may weigh per produced
// topic, the serdes, the processing thread, the consumer.
import type { KafkaConsumer } from '@confluentinc/kafka-javascript';
import type { RdConfig } from '../../kafka/clients.ts';
import type { RecordSizeLimits } from '../../core/record-size.ts';
import type { ThreadSpawner } from '../offload/processing-thread.ts';
import { ThreadPool, type PoolParts } from '../offload/thread-pool.ts';
import type { RuntimeTopology } from '../task/worker-topology.ts';
import type { TransactionalOutput } from '../transaction/output.ts';
import type { ClientSupplier } from '../base/client-supplier.ts';
import type { ResolvedWorkerConfig } from '../base/config.ts';
import { WorkerError } from '../base/errors.ts';
import { readRecordSizeLimits } from '../base/record-limits.ts';
import type { WorkerEvent } from '../base/worker-events.ts';
import type { WorkerServices } from '../base/worker-services.ts';
import { publishEndpoint } from '../queries/endpoints.ts';
import { refuseLiveNamesake, type NamesakeCheck } from '../transaction/instance-guard.ts';
import { prepareTopics } from './worker-setup.ts';
import { checkUpgrade, type UpgradeGuardParts } from './upgrade-guard.ts';
import type { RecordedTopology } from '../../kafka/topology-record.ts';

export interface StartupParts {
  readonly topology: RuntimeTopology;
  readonly config: ResolvedWorkerConfig;
  readonly clients: ClientSupplier;
  readonly emit: (event: WorkerEvent) => void;
  /** Stores whose state a topology change may drop (`run --reset-state`): worker/upgrade-guard.ts. */
  readonly resetStores?: ReadonlySet<string>;
}

/** The upgrade check's parts, when the client supplier can reach the topology record and the topology has a fingerprint. */
function upgradeGuardParts({ topology, config, clients, emit, resetStores }: StartupParts, services: WorkerServices): UpgradeGuardParts | undefined {
  const records = clients.topologyRecord?.(config.bootstrap, config.appId, config.kafka);
  const fingerprint = topology.fingerprint?.bind(topology);
  if (records === undefined || fingerprint === undefined) return undefined;
  return { config, transactionalId: services.transactionalId, records, topicConfigs: clients.topicConfigs?.(config.bootstrap, config.kafka), fingerprint, resetStores: resetStores ?? new Set(), emit };
}

/**
 * Creates or checks the topics and refuses a live namesake, with one admin client (short-lived admin
 * clients have been seen to crash the process on teardown, admin.ts), then publishes this replica's
 * query endpoint. Returns the partition count of every topic the application uses.
 */
export async function prepareCluster(parts: StartupParts, services: WorkerServices, namesake: NamesakeCheck): Promise<Map<string, number>> {
  const { topology, config, clients } = parts;
  const guard = upgradeGuardParts(parts, services);
  let record: RecordedTopology | undefined;
  const partitions = await clients.withAdmin(
    config.bootstrap,
    async (admin) => {
      const counts = await prepareTopics(admin, topology, services, guard && (async (planned) => void (record = await checkUpgrade(guard, planned))));
      // Before this worker's producer exists: its initTransactions would fence a live namesake mid-work.
      await refuseLiveNamesake(admin, namesake);
      return counts;
    },
    config.kafka,
  );
  if (record !== undefined) await guard?.records.write(record);
  if (config.advertisedUrl !== undefined) {
    await publishEndpoint({ bootstrap: config.bootstrap, kafka: config.kafka, withAdmin: clients.withAdmin }, config.appId, {
      clientId: String(services.clientConfig()['client.id']),
      instanceId: config.instanceId,
      url: config.advertisedUrl,
    });
  }
  return partitions;
}

/** Registers or looks up every serde's schemas before the first record (the registry serdes). */
export async function prepareSerdes(topology: RuntimeTopology, config: ResolvedWorkerConfig): Promise<void> {
  for (const { serde, ctx } of topology.serdeUsages()) await serde.prepare?.(ctx, { registryUrl: config.registryUrl });
}

/**
 * Learns each produced topic's max.message.bytes, so that a record over it is dead-lettered where it
 * is built instead of the broker refusing its batch, and the transaction with it, on every replay.
 * Not learnt (a secured listener, no answer), the producer's limit alone is checked, and a topic
 * that keeps refusing batches stops the worker (transaction/driver.ts).
 */
export async function learnRecordLimits({ topology, config, clients, emit }: StartupParts, output: TransactionalOutput): Promise<RecordSizeLimits> {
  const produced = [...new Set(topology.topics.filter((t) => t.kind !== 'source').map((t) => t.name))];
  const { limits, unknown } = await readRecordSizeLimits(clients, config.bootstrap, produced, config.kafka);
  // librdkafka fills a batch up to batch.size whatever the topic: several records each under a
  // topic's limit would still make a batch over it.
  const tightest = Math.min(...produced.map((t) => limits.maxRecordBytes(t)));
  if (Number.isFinite(tightest)) output.limitBatchBytes(tightest);
  emit({ type: 'record-limits', messageMaxBytes: limits.messageMaxBytes, topicMaxMessageBytes: limits.topicLimits(), ...(unknown === undefined ? {} : { unknown }) });
  return limits;
}

/**
 * Starts the processing threads (config `threads`) when the topology has sub-topologies they can run;
 * undefined: the main thread runs every stage.
 */
export async function startProcessingThreads(
  { topology, config, emit }: StartupParts,
  option: { readonly spawn: ThreadSpawner; readonly file: string } | undefined,
  limits: RecordSizeLimits,
  parts: PoolParts,
): Promise<ThreadPool | undefined> {
  if (option === undefined || !config.processingThread || config.threads === 0) return undefined;
  // Each thread's cache is its own: the worker's budget is shared out between them.
  const cache = { maxBytes: Math.floor(config.cacheMaxBytes / config.threads), maxRecords: config.cacheMaxRecords };
  const started = await ThreadPool.start(
    option.spawn,
    { file: option.file, appId: config.appId, registryUrl: config.registryUrl, messageMaxBytes: limits.messageMaxBytes, topicMaxMessageBytes: limits.topicLimits(), cache },
    topology.subtopologies.map((s) => s.sourceTopics),
    config.threads,
    parts,
  );
  if (typeof started === 'string') {
    emit({ type: 'processing-thread', subtopologies: [], off: started });
    return undefined;
  }
  // Persistent stores stay on the main thread: their LMDB environments and checkpoints are the task manager's.
  const hosted = config.stateStore === 'memory' ? [...started.hostable] : [];
  emit({ type: 'processing-thread', subtopologies: [...started.offloadable], hosted, threads: started.threads.length });
  return started;
}

/** A record the retry policy may hold longer than a transaction lives would have its transaction time out under it. */
export function checkRetryBudget(topology: RuntimeTopology, config: ResolvedWorkerConfig): void {
  const budget = topology.totalRetryBudgetMs();
  if (budget >= config.transactionTimeoutMs) {
    throw new WorkerError(
      'RETRY_BUDGET_EXCEEDS_TIMEOUT',
      `the topology's retry policy can hold one record for ${budget} ms, not below transactionTimeoutMs (${config.transactionTimeoutMs}): lower maxAttempts/maxBackoffMs or raise the timeout`,
    );
  }
}

/** The worker's consumer (worker-setup.ts's consumerConfig), subscribed to every source and repartition topic. */
export async function subscribedConsumer(clients: ClientSupplier, topology: RuntimeTopology, config: RdConfig): Promise<KafkaConsumer> {
  const consumer = await clients.consumer(config);
  consumer.setDefaultConsumeTimeout(50);
  // Otherwise consume(n) waits up to the timeout for each further message: under a trickle a batch,
  // and the transaction with it, would stay open for seconds.
  (consumer as unknown as { setDefaultIsTimeoutOnlyForFirstMessage(v: boolean): void }).setDefaultIsTimeoutOnlyForFirstMessage(true);
  consumer.subscribe([...new Set(topology.subtopologies.flatMap((s) => s.sourceTopics))]);
  return consumer;
}
