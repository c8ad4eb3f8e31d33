import rdkafka from '@confluentinc/kafka-javascript';
import type { KafkaConsumer, LibrdKafkaError, Message, Producer, TopicPartitionOffset, TopicPartitionOffsetAndMetadata } from '@confluentinc/kafka-javascript';

/**
 * Promise wrappers over the node-rdkafka-style API of @confluentinc/kafka-javascript.
 * That API, unlike its KafkaJS layer, takes the consumer for sendOffsetsToTransaction (KIP-447 fencing),
 * real timeouts on every transaction call, and reports librdkafka's own error flags.
 */
/** librdkafka's logical offset for "the first record still in the log". */
export const OFFSET_BEGINNING = -2;

export const { Producer: RdProducer, KafkaConsumer: RdConsumer, CODES } = rdkafka as unknown as {
  Producer: typeof Producer;
  KafkaConsumer: typeof KafkaConsumer;
  CODES: { ERRORS: Record<string, number> };
};
export const ERR = CODES.ERRORS as Readonly<Record<string, number>>;

export type RdConfig = Record<string, string | number | boolean | ((...args: never[]) => void)>;

import { isKafkaError } from './client-errors.ts';

export { isClientError, isKafkaError } from './client-errors.ts';

function callback<T>(resolve: (v: T) => void, reject: (e: unknown) => void) {
  return (err: LibrdKafkaError | null | undefined, value?: T) => (err ? reject(err) : resolve(value as T));
}

/** Topic-level options the binding ignores in the global config: they must go in the topic config. */
const TOPIC_LEVEL = new Set(['auto.offset.reset', 'request.required.acks', 'acks', 'message.timeout.ms', 'partitioner']);

export async function connectProducer(conf: RdConfig): Promise<Producer> {
  const [global, topic] = splitTopicLevel(conf);
  const producer = new RdProducer(global as never, topic as never);
  forwardDebugLog(producer, global);
  await new Promise<void>((resolve, reject) => producer.connect({}, (err) => (err ? reject(err) : resolve())));
  // Delivery reports and errors are served by librdkafka's poll; without it they pile up.
  producer.setPollInterval(20);
  return producer;
}

/**
 * librdkafka's `debug` contexts (e.g. ONCEFLOW_KAFKA_DEBUG=eos,protocol) log through the binding's
 * event emitter, which nothing reads by default: without this, asking for them prints nothing.
 */
function forwardDebugLog(client: Producer | KafkaConsumer, conf: RdConfig): void {
  if (conf.debug === undefined) return;
  (client as unknown as { on(event: 'event.log', listener: (entry: { fac?: string; message?: string }) => void): void }).on('event.log', (entry: { fac?: string; message?: string }) => process.stderr.write(`[librdkafka ${new Date().toISOString().slice(11, 23)}] ${entry.fac ?? ''} ${entry.message ?? ''}\n`));
}

function splitTopicLevel(conf: RdConfig, topicConf: RdConfig = {}): [RdConfig, RdConfig] {
  const global: RdConfig = {};
  const topic: RdConfig = { ...topicConf };
  for (const [k, v] of Object.entries(conf)) (TOPIC_LEVEL.has(k) ? topic : global)[k] = v;
  return [global, topic];
}

/** A consumer that reads its assigned partitions to their end (partition EOF tells where), committed records only, and commits nothing. */
export const READ_TO_END_CONFIG: Readonly<RdConfig> = {
  'enable.auto.commit': false,
  'enable.partition.eof': true,
  'isolation.level': 'read_committed',
  'auto.offset.reset': 'earliest',
  'fetch.wait.max.ms': 10,
};

export async function connectConsumer(conf: RdConfig, topicConf: RdConfig = {}): Promise<KafkaConsumer> {
  const [global, topic] = splitTopicLevel(conf, topicConf);
  const consumer = new RdConsumer(global as never, topic as never);
  forwardDebugLog(consumer, global);
  await new Promise<void>((resolve, reject) => consumer.connect({}, (err) => (err ? reject(err) : resolve())));
  return consumer;
}

export function initTransactions(p: Producer, timeoutMs: number): Promise<void> {
  return new Promise((res, rej) => p.initTransactions(timeoutMs, callback(res, rej)));
}
export function beginTransaction(p: Producer): Promise<void> {
  return new Promise((res, rej) => p.beginTransaction(callback(res, rej)));
}
export function commitTransaction(p: Producer, timeoutMs: number): Promise<void> {
  return new Promise((res, rej) => p.commitTransaction(timeoutMs, callback(res, rej)));
}
export function abortTransaction(p: Producer, timeoutMs: number): Promise<void> {
  return new Promise((res, rej) => p.abortTransaction(timeoutMs, callback(res, rej)));
}
export function sendOffsetsToTransaction(p: Producer, offsets: TopicPartitionOffset[], c: KafkaConsumer, timeoutMs: number): Promise<void> {
  return new Promise((res, rej) => p.sendOffsetsToTransaction(offsets, c, timeoutMs, callback(res, rej)));
}
export function flush(p: Producer, timeoutMs: number): Promise<void> {
  return new Promise((res, rej) => p.flush(timeoutMs, callback(res, rej)));
}
export function consumeBatch(c: KafkaConsumer, max: number): Promise<Message[]> {
  return new Promise((res, rej) => c.consume(max, (err, messages) => (err ? rej(err) : res(messages))));
}
export function committedOffsets(c: KafkaConsumer, partitions: { topic: string; partition: number }[], timeoutMs: number): Promise<TopicPartitionOffsetAndMetadata[]> {
  return new Promise((res, rej) => c.committed(partitions, timeoutMs, callback(res, rej)));
}
export function seek(c: KafkaConsumer, tpo: TopicPartitionOffset, timeoutMs: number): Promise<void> {
  return new Promise((res, rej) => c.seek(tpo, timeoutMs, (err) => (err ? rej(err) : res())));
}
/** A topic created a moment ago answers these until its leader is known: worth asking again, not failing. */
const LEADERSHIP_PENDING = new Set([ERR.ERR_NOT_LEADER_FOR_PARTITION, ERR.ERR_LEADER_NOT_AVAILABLE, ERR.ERR_UNKNOWN_TOPIC_OR_PART, ERR.ERR__UNKNOWN_PARTITION]);

export async function watermarks(c: KafkaConsumer | Producer, topic: string, partition: number, timeoutMs: number): Promise<{ low: number; high: number }> {
  const deadline = Date.now() + timeoutMs;
  for (let attempt = 1; ; attempt++) {
    try {
      return await new Promise((res, rej) =>
        c.queryWatermarkOffsets(topic, partition, Math.max(1, deadline - Date.now()), (err, o) => (err ? rej(err) : res({ low: o.lowOffset, high: o.highOffset }))),
      );
    } catch (e) {
      if (!isKafkaError(e) || !LEADERSHIP_PENDING.has(e.code) || Date.now() + 100 * attempt > deadline) throw e;
      await new Promise((r) => setTimeout(r, 100 * attempt));
    }
  }
}
export function disconnect(c: KafkaConsumer | Producer, timeoutMs = 5000): Promise<void> {
  return new Promise((res) => {
    const timer = setTimeout(res, timeoutMs);
    try {
      // The binding deletes a producer's librdkafka handle on a libuv thread, and its poll() takes no lock:
      // a poll-interval tick during that delete polls freed memory and the process dies with SIGSEGV
      // (reproduced in rd_kafka_q_serve under Producer::NodePoll). The flush inside disconnect still serves
      // the last delivery reports.
      if (c instanceof RdProducer) c.setPollInterval(0);
      c.disconnect(() => {
        clearTimeout(timer);
        res();
      });
    } catch {
      clearTimeout(timer);
      res();
    }
  });
}

/** Headers as the client hands them over (one single-key object per header) turned into pairs. */
export function headerPairs(headers: Message['headers']): { key: string; value: Buffer }[] {
  if (!headers) return [];
  const out: { key: string; value: Buffer }[] = [];
  for (const h of headers) {
    for (const key in h) {
      const v = h[key];
      if (v !== undefined) out.push({ key, value: typeof v === 'string' ? Buffer.from(v) : v });
    }
  }
  return out;
}

/** Methods the JS consumer has but its type declarations omit (cooperative rebalancing). */
export interface CooperativeConsumer {
  incrementalAssign(partitions: { topic: string; partition: number; offset?: number }[]): void;
  incrementalUnassign(partitions: { topic: string; partition: number }[]): void;
  assignmentLost(): boolean;
}
export function cooperative(c: KafkaConsumer): CooperativeConsumer {
  return c as unknown as CooperativeConsumer;
}

/**
 * Adds and removes assigned partitions the way the group's protocol wants: incrementally under
 * cooperative rebalancing, the whole assignment at once under an eager assignor (range).
 */
export interface AssignmentChanges {
  add(partitions: { topic: string; partition: number; offset?: number }[]): void;
  remove(partitions: { topic: string; partition: number }[]): void;
}
export function assignmentChanges(c: KafkaConsumer): AssignmentChanges {
  const consumer = c as unknown as CooperativeConsumer & { rebalanceProtocol(): string };
  if (consumer.rebalanceProtocol() === 'EAGER') {
    return { add: (partitions) => c.assign(partitions), remove: () => c.unassign() };
  }
  return { add: (partitions) => consumer.incrementalAssign(partitions), remove: (partitions) => consumer.incrementalUnassign(partitions) };
}
