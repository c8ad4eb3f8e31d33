import type { KafkaConsumer, Producer } from '@confluentinc/kafka-javascript';
import { withAdmin, type AdminClient, type ClientOptions } from '../kafka/admin.ts';
import { connectConsumer, connectProducer, type RdConfig } from '../kafka/clients.ts';

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
}

export const kafkaClients: ClientSupplier = {
  consumer: (config) => connectConsumer(config, {}),
  producer: (config) => connectProducer(config),
  withAdmin: (bootstrap, fn, kafka) => withAdmin(bootstrap, fn, kafka),
};
