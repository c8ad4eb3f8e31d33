import type { KafkaConsumer, LibrdKafkaError } from '@confluentinc/kafka-javascript';
import { ensureTopics, fetchPartitionCounts, requireTopics, type AdminClient, type TopicSpec } from '../../kafka/admin.ts';
import type { RdConfig } from '../../kafka/clients.ts';
import { recordsBehind } from '../../kafka/lag.ts';
import { probeKey, type FirstReadable, type ProbeRange } from '../../kafka/readable-probe.ts';
import type { LagLookup } from '../base/client-supplier.ts';
import type { ResolvedWorkerConfig } from '../base/config.ts';
import { auditInternalTopics } from './internal-topic-audit.ts';
import { checkTableSourceCompaction } from './table-source-check.ts';
import { groupProtocolOptions, type GroupProtocol } from './group-protocol.ts';
import { tableSourceTopics } from '../../graph/table-source-topics.ts';
import { parsePartitionKey, type PartitionProgress, type PartitionRef } from '../base/partition-progress.ts';
import type { PartitionLag } from '../base/worker-events.ts';
import type { WorkerServices } from '../base/worker-services.ts';
import type { RuntimeTopology } from '../task/worker-topology.ts';

/**
 * Checks the user's topics, creates the internal ones with their kind's configs and, given the
 * worker's services, holds those that already existed to the same configs (internal-topic-audit.ts);
 * returns the partition count of every topic the application uses.
 */
export async function prepareTopics(
  admin: AdminClient,
  topology: RuntimeTopology,
  services?: Pick<WorkerServices, 'config' | 'clients' | 'emit'>,
  /** Runs once the partition counts are planned, before any internal topic is created (the upgrade check). */
  beforeCreate?: (partitions: ReadonlyMap<string, number>) => Promise<void>,
): Promise<Map<string, number>> {
  const userSources = topology.topics.filter((t) => t.kind === 'source' && !t.internal).map((t) => t.name);
  // With auto-creation off (the broker default in production) a produce to a missing topic only
  // times out inside the transaction, which then aborts on every replay: say so at start instead.
  const userOutputs = topology.topics.filter((t) => (t.kind === 'sink' || t.kind === 'dead-letter') && !t.internal).map((t) => t.name);
  await requireTopics(admin, { source: userSources, output: userOutputs }, services?.config.kafka);
  const counts = await fetchPartitionCounts(admin, userSources);
  const planned = topology.resolvePartitions(counts).topics;
  await beforeCreate?.(new Map(planned.filter((t) => t.partitions !== undefined).map((t) => [t.name, t.partitions!] as const)));
  const internal = planned.filter((t) => t.internal);
  const specs: TopicSpec[] = internal.map((t) => ({ name: t.name, partitions: t.partitions ?? 1, compact: t.cleanupPolicy === 'compact', ...(t.config ? { config: t.config } : {}) }));
  const created = new Set(await ensureTopics(admin, specs));
  if (services !== undefined) {
    const { bootstrap, kafka } = services.config;
    const access = services.clients.topicConfigs?.(bootstrap, kafka);
    await auditInternalTopics(internal.filter((t) => !created.has(t.name)), access, services.emit);
    await checkTableSourceCompaction(tableSourceTopics(topology), access, services.emit);
  }
  return new Map([...counts, ...specs.map((t) => [t.name, t.partitions] as const)]);
}

/**
 * The worker's consumer: read_committed, offsets committed only by the worker, and the group protocol
 * group-protocol.ts chose (a joining topology needs partition N of each co-partitioned topic together).
 */
export function consumerConfig(clientConfig: RdConfig, config: ResolvedWorkerConfig, onRebalance: (err: LibrdKafkaError, assignment: PartitionRef[]) => void, protocol: GroupProtocol): RdConfig {
  return {
    ...clientConfig,
    'group.id': config.appId,
    'isolation.level': 'read_committed',
    'enable.auto.commit': false,
    'enable.auto.offset.store': false,
    'auto.offset.reset': 'earliest',
    ...groupProtocolOptions(protocol, config.sessionTimeoutMs),
    'max.poll.interval.ms': config.maxPollIntervalMs,
    'fetch.wait.max.ms': 20,
    'rebalance_cb': onRebalance,
  };
}

/**
 * `recordsBehind` per owned source partition, as `onceflow status` and the console count it. The end is
 * the one the client cached on its last fetch, which under read_committed is the last stable offset;
 * `lookup` finds whether anything readable lies before it or only commit markers (a caught-up worker on
 * a transactionally written partition is then at 0, not 1). It answers a range it saw before from
 * memory, so a caught-up worker's scrape costs no read.
 */
export async function partitionLag(consumer: KafkaConsumer, owned: Iterable<string>, progress: PartitionProgress, lookup?: Pick<LagLookup, 'firstReadable'>): Promise<PartitionLag[]> {
  const ranges: ProbeRange[] = [];
  for (const key of owned) {
    const { topic, partition } = parsePartitionKey(key);
    let end: number;
    try {
      end = consumer.getWatermarkOffsets(topic, partition).highOffset;
    } catch {
      continue; // not fetched yet: no end offset known
    }
    if (end < 0) continue;
    const from = progress.pending.get(key)?.offset ?? progress.committed.get(key) ?? 0;
    ranges.push({ topic, partition, from, end });
  }
  const firstReadable = lookup ? await lookup.firstReadable(ranges) : new Map<string, FirstReadable>();
  return ranges.map(({ topic, partition, from, end }) => ({ topic, partition, lag: recordsBehind(from, end, firstReadable.get(probeKey(topic, partition))) }));
}
