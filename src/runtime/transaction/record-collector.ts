import type { Message } from '@confluentinc/kafka-javascript';
import { DEAD_LETTER, LINEAGE, nextLineage } from '../../core/headers.ts';
import { partitionFor } from '../../core/partitioner.ts';
import { isRecordBatch, unpackRecordBatch } from '../../core/record-batch.ts';
import { IllegalTransitionError } from '../base/errors.ts';
import type { CommitCollector, IncomingRecord, OutgoingRecord, RecordCollector, RecordHeader, RecordOrigin } from '../../core/records.ts';
import type { WorkerServices } from '../base/worker-services.ts';
import type { TransactionalOutput } from './output.ts';
import type { TopicRecordCount } from '../base/worker-events.ts';

const NO_HEADERS: readonly RecordHeader[] = [];

/** What an output needs of the input record it stands for. */
export type OriginRecord = Pick<IncomingRecord, 'topic' | 'partition' | 'offset' | 'timestamp'>;

/**
 * Between the client and the tasks: turns fetched messages into records, and puts what the tasks
 * emit into the open transaction with lineage headers, counting records per topic and reporting
 * dead letters.
 */
/** Outputs computed ahead and held back (loop/speculation.ts), each beside the origin it is sent with. */
export interface HeldOutputs {
  readonly outputs: readonly OutgoingRecord[];
  readonly origins: readonly RecordOrigin[];
}

export class WorkerRecordCollector {
  private readonly recordsByTopic = new Map<string, { consumed: number; produced: number }>();

  /**
   * What the tasks emit as the transaction is about to commit: results a record cache held back
   * (each with the origin it stands for), then changelog records, one per key written, which stand
   * for no one input record and carry no lineage (restore, their only reader, needs none).
   */
  readonly commitCollector: CommitCollector = {
    send: (r, origin) => {
      // What a task releases at the commit stands for a record processed earlier, which only the task knows.
      if (!origin) throw new IllegalTransitionError('record collector', 'COMMITTING', 'send', undefined, 'a record released at the commit needs the origin it stands for');
      this.send(r, origin);
    },
    changelog: (r) => {
      this.output.produce(r.topic, r.partition ?? null, r.value, r.key, r.timestamp ?? Date.now());
      this.countProduced(r.topic);
    },
  };

  /** Where a null key goes in each repartition topic: round robin, as no key decides. */
  private readonly nullKeyTurns = new Map<string, number>();

  constructor(
    private readonly services: WorkerServices,
    private readonly output: TransactionalOutput,
    private readonly deadLetterTopics: ReadonlySet<string>,
    readonly repartitionTopics: ReadonlySet<string>,
    private readonly partitionCount: (topic: string) => number | undefined,
  ) {}

  /** A fetched message as the tasks read it. */
  incoming(m: Message): IncomingRecord {
    return toIncoming(m);
  }

  /** The records of a repartition topic's batch message, or undefined for a plain message (read with `incoming`). */
  batched(m: Message): IncomingRecord[] | undefined {
    return isRecordBatch(m.headers) ? unpackRecordBatch(m) : undefined;
  }

  /** Counted once their task has processed them. */
  consumed(topic: string, records: number): void {
    this.services.stats.recordsConsumed += records;
    this.topicCount(topic).consumed += records;
  }

  /**
   * Where the task processing `record` sends its outputs: one-way, each output with its origin (by
   * default `record`). One collector serves every record, re-aimed per record: one object per
   * record would be garbage a million times a minute.
   */
  sinkFor(record: IncomingRecord): RecordCollector {
    this.sinkRecord = record;
    this.sinkOrigin = undefined;
    return this.sink;
  }

  private sinkRecord: IncomingRecord | undefined;
  /** Made only for a task that sends without an origin: the runtime's own tasks always pass one. */
  private sinkOrigin: RecordOrigin | undefined;
  private readonly sink: RecordCollector = {
    send: (r, origin) => this.send(r, origin ?? (this.sinkOrigin ??= { record: this.sinkRecord!, released: false, seq: 0, lineagePrefix: undefined })),
  };

  /** What records processed while the last transaction committed emitted, now into the open one, in order. */
  sendSpeculated(held: HeldOutputs): void {
    const { outputs, origins } = held;
    for (let i = 0; i < outputs.length; i++) this.send(outputs[i]!, origins[i]!);
  }

  topicRecords(): TopicRecordCount[] {
    return [...this.recordsByTopic].map(([topic, c]) => ({ topic, ...c }));
  }

  private send(r: OutgoingRecord, origin: RecordOrigin): void {
    this.sendResolved(r, nextLineage(origin), origin.record);
  }

  /**
   * An output whose lineage is already numbered (a processing thread's task numbered it, nextLineage),
   * beside the input record it stands for: where its timestamp defaults from and a dead letter was read.
   */
  sendResolved(r: OutgoingRecord, lineageValue: string, origin: OriginRecord): void {
    const tracer = this.services.tracer;
    if (tracer !== null) r = tracer.traced(r, lineageValue, origin, this.deadLetterTopics.has(r.topic));
    if (this.repartitionTopics.has(r.topic)) {
      this.output.produceBatched(r.topic, r.partition ?? this.partitionOf(r.topic, r.key), {
        key: r.key,
        value: r.value,
        timestamp: r.timestamp ?? origin.timestamp,
        lineage: lineageValue,
        headers: r.headers,
      });
      this.countProduced(r.topic);
      return;
    }
    const lineage = { [LINEAGE.header]: lineageValue };
    let headers: Record<string, Buffer | string>[];
    if (r.headers !== undefined && r.headers.length > 0) {
      headers = [];
      for (const h of r.headers) headers.push({ [h.key]: h.value });
      headers.push(lineage);
    } else headers = [lineage];
    this.output.produceOutput(r.topic, r.partition ?? null, r.value, r.key, r.timestamp ?? origin.timestamp, headers);
    this.countProduced(r.topic);
    if (this.deadLetterTopics.has(r.topic)) {
      const header = (k: string) => r.headers?.find((h) => h.key === k)?.value.toString() ?? 'unknown';
      this.services.stats.deadLettered++;
      this.services.emit({
        type: 'dead-lettered',
        stage: header(DEAD_LETTER.stage),
        code: header(DEAD_LETTER.code),
        topic: origin.topic,
        partition: origin.partition,
        offset: origin.offset,
      });
    }
  }

  /** The partition Kafka's default partitioner would choose (a batch is produced to one partition, so the key no longer decides). */
  private partitionOf(topic: string, key: Buffer | null): number {
    const partitions = this.partitionCount(topic);
    // Known for every topic of the topology once the worker started, before any record is processed.
    if (partitions === undefined) throw new IllegalTransitionError('record collector', 'RUNNING', 'send', undefined, `the partition count of ${topic} is unknown`);
    if (key !== null) return partitionFor(key, partitions);
    const turn = this.nullKeyTurns.get(topic) ?? 0;
    this.nullKeyTurns.set(topic, turn + 1);
    return turn % partitions;
  }

  private countProduced(topic: string): void {
    this.services.stats.recordsProduced++;
    this.topicCount(topic).produced++;
  }

  private topicCount(topic: string): { consumed: number; produced: number } {
    let count = this.recordsByTopic.get(topic);
    if (!count) this.recordsByTopic.set(topic, (count = { consumed: 0, produced: 0 }));
    return count;
  }
}

function toIncoming(m: Message): IncomingRecord {
  let headers: readonly RecordHeader[] = NO_HEADERS;
  let lineage: string | undefined;
  if (m.headers && m.headers.length > 0) {
    // Most records onceflow reads back (repartition topics) carry the lineage header alone: no list then.
    let list: RecordHeader[] | undefined;
    for (const h of m.headers) {
      for (const k in h) {
        const v = h[k];
        if (v === undefined) continue;
        if (k === LINEAGE.header) lineage = typeof v === 'string' ? v : v.toString('latin1');
        else (list ??= []).push({ key: k, value: typeof v === 'string' ? Buffer.from(v) : v });
      }
    }
    if (list !== undefined) headers = list;
  }
  const key = m.key === undefined || m.key === null ? null : typeof m.key === 'string' ? Buffer.from(m.key) : m.key;
  return { topic: m.topic, partition: m.partition, offset: m.offset, key, value: m.value, timestamp: m.timestamp ?? Date.now(), headers, lineage };
}
