import { randomUUID } from 'node:crypto';
import type { IncomingRecord } from '../core/records.ts';
import { isRecordBatch, unpackRecordBatch } from '../core/record-batch.ts';
import type { Message } from '@confluentinc/kafka-javascript';
import { connectConsumer, consumeBatch, disconnect, headerPairs, OFFSET_BEGINNING, watermarks } from './clients.ts';
import { partitionCounts, TopicError, withAdmin, type ClientOptions } from './admin.ts';

export type IsolationLevel = 'read_committed' | 'read_uncommitted';

export interface ReadTopicOptions {
  readonly isolation?: IsolationLevel;
  /** How long a topic the metadata does not show is asked for again before TOPIC_MISSING (default 0). */
  readonly missingTopicGraceMs?: number;
  /** Give up waiting for the end after this long without a new record. */
  readonly idleMs?: number;
  readonly clientOptions?: ClientOptions;
}

/**
 * A topic's partition count. A broker restarted a moment ago may answer metadata without a topic until
 * it has caught up with the controller: with `missingTopicGraceMs`, a missing topic is asked again for
 * that long before it is believed (readers that know the topic exists, as the chaos harness's).
 */
export async function partitionsOf(bootstrap: string, topic: string, clientOptions: ClientOptions | undefined, missingTopicGraceMs = 0): Promise<number> {
  const deadline = Date.now() + missingTopicGraceMs;
  for (;;) {
    try {
      return (await withAdmin(bootstrap, (admin) => partitionCounts(admin, [topic], clientOptions), clientOptions)).get(topic) ?? 0;
    } catch (e) {
      if (!(e instanceof TopicError) || e.code !== 'TOPIC_MISSING' || Date.now() > deadline) throw e;
      await new Promise((resolve) => setTimeout(resolve, 500));
    }
  }
}

/** A message as the records it holds: one, or a repartition topic's batch (core/record-batch.ts) unpacked. */
function incomingRecords(m: Message): IncomingRecord[] {
  if (isRecordBatch(m.headers)) return unpackRecordBatch(m);
  return [{
    topic: m.topic,
    partition: m.partition,
    offset: m.offset,
    key: m.key === undefined || m.key === null ? null : Buffer.isBuffer(m.key) ? m.key : Buffer.from(m.key),
    value: m.value,
    timestamp: m.timestamp ?? 0,
    headers: headerPairs(m.headers),
  }];
}

/** A consumer outside any group (never joined nor committed to) reading one topic. */
export function readerConfig(bootstrap: string, isolation: IsolationLevel, clientOptions: ClientOptions = {}): Record<string, string | number | boolean> {
  return {
    'bootstrap.servers': bootstrap,
    // Never joined nor committed to, but librdkafka still looks up its coordinator: on a secured cluster the
    // reader needs DESCRIBE on it, or passes a group it may use in clientOptions.
    'group.id': `onceflow-reader-${randomUUID()}`,
    'enable.auto.commit': false,
    'enable.partition.eof': true,
    'isolation.level': isolation,
    'auto.offset.reset': 'earliest',
    'fetch.wait.max.ms': 50,
    ...clientOptions,
  };
}

/**
 * Reads every partition of a topic from the beginning to its current end, without a group.
 * The end is the high watermark taken at the start; a read_committed reader stops short of it
 * where the last offsets are an open or aborted transaction or a commit marker, so "done" is
 * decided by partition EOF, not by reaching high - 1.
 */
export async function readTopic(bootstrap: string, topic: string, opts: ReadTopicOptions = {}): Promise<IncomingRecord[]> {
  const partitions = await partitionsOf(bootstrap, topic, opts.clientOptions, opts.missingTopicGraceMs);
  const consumer = await connectConsumer(readerConfig(bootstrap, opts.isolation ?? 'read_committed', opts.clientOptions));
  const out: IncomingRecord[] = [];
  try {
    const pending = new Set<number>();
    for (let p = 0; p < partitions; p++) {
      const { high } = await watermarks(consumer, topic, p, 10_000);
      if (high > 0) pending.add(p);
    }
    consumer.on('partition.eof', (eof) => pending.delete(eof.partition));
    consumer.assign([...pending].map((partition) => ({ topic, partition, offset: 0 })));
    let idleSince = Date.now();
    const idleMs = opts.idleMs ?? 15_000;
    while (pending.size > 0) {
      const batch = await consumeBatch(consumer, 10_000);
      if (batch.length > 0) idleSince = Date.now();
      else if (Date.now() - idleSince > idleMs) throw new Error(`reading ${topic}: partitions ${[...pending].join(', ')} gave nothing for ${idleMs} ms before their end`);
      for (const m of batch) out.push(...incomingRecords(m));
    }
  } finally {
    await disconnect(consumer);
  }
  return out;
}

export interface FollowTopicOptions {
  /** From each partition's first record; otherwise only records written from now on. */
  readonly fromBeginning: boolean;
  readonly isolation: IsolationLevel;
  readonly clientOptions?: ClientOptions;
  /** How long a topic the metadata does not show is asked for again before TOPIC_MISSING (default 0). */
  readonly missingTopicGraceMs?: number;
  /** Ends the stream (after the batch in hand). */
  readonly signal?: AbortSignal;
}

/** librdkafka's logical offset for "after the last record" (OFFSET_BEGINNING: clients.ts). */
const OFFSET_END = -1;

/** Every partition of a topic, record by record as they arrive, until the signal aborts or the caller stops iterating. */
export async function* followTopic(bootstrap: string, topic: string, opts: FollowTopicOptions): AsyncGenerator<IncomingRecord> {
  const partitions = await partitionsOf(bootstrap, topic, opts.clientOptions, opts.missingTopicGraceMs);
  const consumer = await connectConsumer({ ...readerConfig(bootstrap, opts.isolation, opts.clientOptions), 'enable.partition.eof': false, 'fetch.wait.max.ms': 100 });
  try {
    const start = opts.fromBeginning ? OFFSET_BEGINNING : OFFSET_END;
    consumer.assign(Array.from({ length: partitions }, (_, partition) => ({ topic, partition, offset: start })));
    while (!opts.signal?.aborted) {
      for (const m of await consumeBatch(consumer, 500)) yield* incomingRecords(m);
    }
  } finally {
    await disconnect(consumer);
  }
}
