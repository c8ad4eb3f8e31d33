import type { OutgoingRecord } from '../core/records.ts';
import { connectProducer, disconnect, flush, type RdConfig } from './clients.ts';

/** A record to write to a topic the caller names once: key, value and headers as bytes. */
export type RecordToProduce = Pick<OutgoingRecord, 'key' | 'value' | 'headers' | 'partition' | 'timestamp'>;

/**
 * Writes records with an idempotent producer and returns once the broker acknowledged every one.
 * Keys are placed with murmur2, as Java clients and the worker place them, so a key lands on the
 * partition a Kafka Streams application would expect.
 */
export async function produceRecords(bootstrap: string, topic: string, records: Iterable<RecordToProduce>, clientOptions: RdConfig = {}): Promise<number> {
  const producer = await connectProducer({ 'bootstrap.servers': bootstrap, 'enable.idempotence': true, 'linger.ms': 10, 'partitioner': 'murmur2_random', ...clientOptions });
  let count = 0;
  try {
    for (const r of records) {
      producer.produce(topic, r.partition ?? null, r.value, r.key, r.timestamp ?? Date.now(), undefined, r.headers?.map((h) => ({ [h.key]: h.value })));
      // Bounded memory for large inputs: librdkafka's queue holds at most what is not yet flushed.
      if (++count % 20_000 === 0) await flush(producer, 60_000);
    }
    await flush(producer, 60_000);
  } finally {
    await disconnect(producer);
  }
  return count;
}
