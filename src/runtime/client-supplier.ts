import type { KafkaConsumer, Producer } from '@confluentinc/kafka-javascript';
import { withAdmin, type AdminClient, type ClientOptions } from '../kafka/admin.ts';
import { connectConsumer, connectProducer, type RdConfig } from '../kafka/clients.ts';
import { canDescribeConfigs, describeTopicConfig } from '../kafka/topic-configs.ts';

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
};
