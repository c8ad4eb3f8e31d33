import { randomUUID } from 'node:crypto';
import type { Producer } from '@confluentinc/kafka-javascript';
import type { OutgoingRecord } from '../core/records.ts';
import { OnceflowError } from '../errors.ts';
import { abortTransaction, beginTransaction, commitTransaction, connectProducer, disconnect, flush, initTransactions, type RdConfig } from './clients.ts';

/** A record to write to a topic the caller names once: key, value and headers as bytes. */
export type RecordToProduce = Pick<OutgoingRecord, 'key' | 'value' | 'headers' | 'partition' | 'timestamp'>;

/** Keys placed with murmur2, as Java clients and the worker place them, so a key lands on the partition a Kafka Streams application would expect. */
const PLACEMENT: RdConfig = { 'linger.ms': 10, 'partitioner': 'murmur2_random' };
/** librdkafka's queue holds at most this many records not yet flushed: bounded memory for large inputs. */
const FLUSH_EVERY = 20_000;
const FLUSH_TIMEOUT_MS = 60_000;

async function produceAll(producer: Producer, topic: string, records: Iterable<RecordToProduce>): Promise<number> {
  let count = 0;
  for (const r of records) {
    producer.produce(topic, r.partition ?? null, r.value, r.key, r.timestamp ?? Date.now(), undefined, r.headers?.map((h) => ({ [h.key]: h.value })));
    if (++count % FLUSH_EVERY === 0) await flush(producer, FLUSH_TIMEOUT_MS);
  }
  await flush(producer, FLUSH_TIMEOUT_MS);
  return count;
}

/** Writes records with an idempotent producer and returns once the broker acknowledged every one. */
export async function produceRecords(bootstrap: string, topic: string, records: Iterable<RecordToProduce>, clientOptions: RdConfig = {}): Promise<number> {
  const producer = await connectProducer({ 'bootstrap.servers': bootstrap, 'enable.idempotence': true, ...PLACEMENT, ...clientOptions });
  try {
    return await produceAll(producer, topic, records);
  } finally {
    await disconnect(producer);
  }
}

/** A transaction of `produceInOneTransaction` that did not commit: read_committed readers see none of its records. */
export class ProduceAbortedError extends OnceflowError {
  readonly code = 'PRODUCE_ABORTED';
}

const TRANSACTION_TIMEOUT_MS = 60_000;

/**
 * Writes every record in one Kafka transaction: all of them become readable (read_committed) at once,
 * or, when anything fails (a record the client or the broker refuses, a broker gone), the transaction
 * is aborted and none of them is. Returns the number written.
 */
export async function produceInOneTransaction(bootstrap: string, topic: string, records: readonly RecordToProduce[], clientOptions: RdConfig = {}): Promise<number> {
  if (records.length === 0) return 0;
  const producer = await connectProducer({
    'bootstrap.servers': bootstrap,
    ...PLACEMENT,
    ...clientOptions,
    // One id per call: two `produce` runs at once must not fence each other.
    'transactional.id': `onceflow-produce-${randomUUID()}`,
    'transaction.timeout.ms': TRANSACTION_TIMEOUT_MS,
  });
  let begun = false;
  try {
    await initTransactions(producer, 30_000);
    await beginTransaction(producer);
    begun = true;
    const count = await produceAll(producer, topic, records);
    await commitTransaction(producer, TRANSACTION_TIMEOUT_MS);
    return count;
  } catch (e) {
    const reason = e instanceof Error ? e.message : String(e);
    if (!begun) throw new ProduceAbortedError(`could not start a transaction on ${bootstrap}, nothing was written: ${reason}`, { cause: e });
    const aborted = await abortTransaction(producer, 30_000).then(() => true, () => false);
    throw new ProduceAbortedError(
      aborted
        ? `the transaction was aborted, none of the ${records.length} records was written to ${topic}: ${reason}`
        : `the transaction failed and could not be aborted either (the broker aborts it after transaction.timeout.ms, ${TRANSACTION_TIMEOUT_MS} ms); read_committed readers never see its records: ${reason}`,
      { cause: e },
    );
  } finally {
    await disconnect(producer);
  }
}
