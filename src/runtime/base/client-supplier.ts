import type { KafkaConsumer, Producer } from '@confluentinc/kafka-javascript';
import { createAdmin, withAdmin, type AdminClient, type ClientOptions } from '../../kafka/admin.ts';
import { setGroupConfigs, setTopicConfigs } from '../../kafka/alter-configs.ts';
import { servesConsumerGroupProtocol } from '../../kafka/api-versions.ts';
import { connectConsumer, connectProducer, type RdConfig } from '../../kafka/clients.ts';
import { ReadableProbe } from '../../kafka/readable-probe.ts';
import { kafkaTopologyRecord, type TopologyRecordAccess } from '../../kafka/topology-record.ts';
import { canDescribeConfigs, describeTopicConfig, describeTopicConfigs } from '../../kafka/topic-configs.ts';

/**
 * Where a worker gets its Kafka clients (Kafka Streams' KafkaClientSupplier): the real ones by
 * default, fakes in the broker-free tests of the loop and the transaction.
 */
export interface ClientSupplier {
  /** A connected consumer. */
  consumer(config: RdConfig): Promise<KafkaConsumer>;
  /** A connected producer; transactions are initialised by its caller. */
  producer(config: RdConfig): Promise<Producer>;
  /** Runs `fn` with a connected admin client and disconnects it after. */
  withAdmin<T>(bootstrap: string, fn: (admin: AdminClient) => Promise<T>, kafka: ClientOptions): Promise<T>;
  /**
   * Each topic's `max.message.bytes` as the broker applies it. Without it (or when it throws) only
   * the producer's own limit is checked before produce, and a topic that refuses a batch stops the
   * worker after a few refusals instead of dead-lettering the record.
   */
  topicMaxMessageBytes?(bootstrap: string, topics: readonly string[], kafka: ClientOptions): Promise<ReadonlyMap<string, number>>;
  /**
   * Reads and changes topic configs, for the check of existing internal topics at start
   * (internal-topic-audit.ts); returns why not where it cannot (a listener it cannot speak to).
   */
  topicConfigs?(bootstrap: string, kafka: ClientOptions): TopicConfigAccess | string;
  /**
   * Asks the broker whether it serves the KIP-848 consumer group protocol and sets a group's dynamic
   * configs (runtime/worker/group-protocol.ts); returns why not where it cannot. Without it `auto` is classic.
   */
  groupProtocol?(bootstrap: string, kafka: ClientOptions): GroupProtocolAccess | string;
  /** Deletes records below given offsets (DeleteRecords), for the repartition purge; without it nothing is purged. */
  recordDeleter?(bootstrap: string, kafka: ClientOptions): RecordDeleter;
  /**
   * A reader that looks past commit markers, so that the lag metric agrees with `onceflow status` and
   * the console (kafka/lag.ts); without it every offset up to the end counts as lag.
   */
  readableProbe?(bootstrap: string, kafka: ClientOptions): LagLookup;
  /**
   * The application's recorded topology fingerprint (`<appId>-topology`): the start check compares the
   * topology with it and records it (worker/upgrade-guard.ts); without it the worker does neither.
   */
  topologyRecord?(bootstrap: string, appId: string, kafka: ClientOptions): TopologyRecordAccess;
}

/** What the worker's lag metric needs of a ReadableProbe. */
export type LagLookup = Pick<ReadableProbe, 'firstReadable' | 'close'>;

export interface TopicConfigAccess {
  /** topic → config name → value as the broker applies it. */
  describe(topics: readonly string[], configs: readonly string[]): Promise<ReadonlyMap<string, ReadonlyMap<string, string>>>;
  /** Sets the named configs of one topic, leaving its others as they are. */
  set(topic: string, settings: Readonly<Record<string, string>>): Promise<void>;
}

export interface GroupProtocolAccess {
  /** True when the broker serves KIP-848's ConsumerGroupHeartbeat (Kafka >= 4.0). */
  servesConsumerProtocol(): Promise<boolean>;
  /** Sets dynamic configs of one consumer group; throws the broker's refusal. */
  setGroupConfigs(group: string, settings: Readonly<Record<string, string>>): Promise<void>;
}

export interface RecordDeleter {
  /** Deletes every record of each partition below its offset. */
  deleteBelow(partitions: readonly { readonly topic: string; readonly partition: number; readonly offset: number }[]): Promise<void>;
  close(): Promise<void>;
}

export const kafkaClients: ClientSupplier = {
  consumer: (config) => connectConsumer(config, {}),
  producer: (config) => connectProducer(config),
  withAdmin: (bootstrap, fn, kafka) => withAdmin(bootstrap, fn, kafka),
  topicMaxMessageBytes: async (bootstrap, topics, kafka) => {
    if (!canDescribeConfigs(kafka)) return new Map();
    const values = await describeTopicConfig(bootstrap, topics, 'max.message.bytes', { clientId: String(kafka['client.id'] ?? 'onceflow') });
    return new Map([...values].map(([topic, value]) => [topic, Number(value)] as const).filter(([, bytes]) => Number.isFinite(bytes) && bytes > 0));
  },
  topicConfigs: (bootstrap, kafka) => {
    if (!canDescribeConfigs(kafka)) return `security.protocol ${String(kafka['security.protocol'])}: DescribeConfigs and IncrementalAlterConfigs are sent on plaintext listeners only`;
    const clientId = String(kafka['client.id'] ?? 'onceflow');
    return {
      describe: (topics, configs) => describeTopicConfigs(bootstrap, topics, configs, { clientId }),
      set: (topic, settings) => setTopicConfigs(bootstrap, topic, settings, { clientId }),
    };
  },
  groupProtocol: (bootstrap, kafka) => {
    if (!canDescribeConfigs(kafka)) return `security.protocol ${String(kafka['security.protocol'])}: ApiVersions and IncrementalAlterConfigs are sent on plaintext listeners only`;
    const clientId = String(kafka['client.id'] ?? 'onceflow');
    return {
      servesConsumerProtocol: () => servesConsumerGroupProtocol(bootstrap, { clientId }),
      setGroupConfigs: (group, settings) => setGroupConfigs(bootstrap, group, settings, { clientId }),
    };
  },
  recordDeleter: (bootstrap, kafka) => adminRecordDeleter(bootstrap, kafka),
  readableProbe: (bootstrap, kafka) => new ReadableProbe(bootstrap, kafka),
  topologyRecord: (bootstrap, appId, kafka) => kafkaTopologyRecord(bootstrap, appId, kafka),
};

/** One admin client for the worker's life, made at the first purge: short-lived ones have crashed the process on teardown (admin.ts). */
function adminRecordDeleter(bootstrap: string, kafka: ClientOptions): RecordDeleter {
  let admin: Promise<AdminClient> | undefined;
  return {
    async deleteBelow(partitions) {
      admin ??= (async () => {
        const a = createAdmin(bootstrap, kafka);
        await a.connect();
        return a;
      })();
      const connected = await admin.catch((e: unknown) => {
        admin = undefined;
        throw e;
      });
      const byTopic = new Map<string, (typeof partitions)[number][]>();
      for (const p of partitions) (byTopic.get(p.topic) ?? byTopic.set(p.topic, []).get(p.topic)!).push(p);
      for (const [topic, entries] of byTopic) {
        await connected.deleteTopicRecords({ topic, partitions: entries.map((p) => ({ partition: p.partition, offset: String(p.offset) })), timeout: 10_000, operationTimeout: 10_000 });
      }
    },
    async close() {
      const a = await admin?.catch(() => undefined);
      admin = undefined;
      await a?.disconnect().catch(() => undefined);
    },
  };
}
