import type { Message } from '@confluentinc/kafka-javascript';
import { DEAD_LETTER, LINEAGE } from '../core/headers.ts';
import { IllegalTransitionError } from './errors.ts';
import { partitionKey } from './partition-progress.ts';
import type { CommitCollector, IncomingRecord, OutgoingRecord, RecordCollector, RecordHeader } from './records.ts';
import type { RuntimeContext } from './runtime-context.ts';
import type { TransactionalOutput } from './transaction/output.ts';
import type { TopicRecordCount } from './worker-events.ts';

/** The input record whose lineage the records being sent carry, and their next sequence number. */
interface Origin {
  readonly record: IncomingRecord;
  seq: number;
  readonly lineage: { readonly topic: Buffer; readonly partition: Buffer };
  /** Sent later on the record's behalf (a cached aggregate result), not while it was processed. */
  readonly released: boolean;
}

const NO_HEADERS: readonly RecordHeader[] = [];

/**
 * Between the client and the tasks: turns fetched messages into records, and puts what the tasks
 * emit into the open transaction with lineage headers, counting records per topic and reporting
 * dead letters.
 */
export class WorkerRecordCollector {
  private readonly lineageCache = new Map<string, { topic: Buffer; partition: Buffer }>();
  private readonly recordsByTopic = new Map<string, { consumed: number; produced: number }>();
  private readonly transactionHeader: Buffer;
  private current: Origin | undefined;
  /** Origins of records a task releases later on behalf of an input record (cached aggregate results). */
  private readonly released = new WeakMap<IncomingRecord, Origin>();
  private readonly collector: RecordCollector = { send: (r) => this.send(r) };

  /**
   * The tasks' changelog records, one per key written in this transaction. Their own path, not send():
   * they stand for no one input record, and restore, their only reader, needs no lineage headers.
   */
  readonly commitCollector: CommitCollector = {
    send: (r) => this.send(r),
    changelog: (r) => {
      this.output.produce(r.topic, r.partition ?? null, r.value, r.key, r.timestamp ?? Date.now());
      this.countProduced(r.topic);
    },
  };

  constructor(
    private readonly context: RuntimeContext,
    private readonly output: TransactionalOutput,
    private readonly deadLetterTopics: ReadonlySet<string>,
  ) {
    this.transactionHeader = Buffer.from(context.transactionalId);
  }

  /** A fetched message as the tasks read it. */
  incoming(m: Message): IncomingRecord {
    return toIncoming(m);
  }

  /** Counted once its task has processed it. */
  consumed(topic: string): void {
    this.context.stats.recordsConsumed++;
    this.topicCount(topic).consumed++;
  }

  /** Where the task processing `record` sends its outputs. */
  collectorFor(record: IncomingRecord): RecordCollector {
    this.current = { record, seq: 0, lineage: this.lineageOf(record), released: false };
    return this.collector;
  }

  topicRecords(): TopicRecordCount[] {
    return [...this.recordsByTopic].map(([topic, c]) => ({ topic, ...c }));
  }

  private lineageOf(record: IncomingRecord): { topic: Buffer; partition: Buffer } {
    const key = partitionKey(record.topic, record.partition);
    let lineage = this.lineageCache.get(key);
    if (!lineage) {
      lineage = { topic: Buffer.from(record.topic), partition: Buffer.from(String(record.partition)) };
      this.lineageCache.set(key, lineage);
    }
    return lineage;
  }

  private releasedOrigin(record: IncomingRecord): Origin {
    let origin = this.released.get(record);
    if (!origin) this.released.set(record, (origin = { record, seq: 0, lineage: this.lineageOf(record), released: true }));
    return origin;
  }

  private send(r: OutgoingRecord): void {
    const origin = r.source === undefined ? this.current : this.releasedOrigin(r.source);
    if (!origin) throw new IllegalTransitionError('record collector', 'no record processed yet', 'send');
    const headers: Record<string, Buffer>[] = [];
    if (r.headers) for (const h of r.headers) headers.push({ [h.key]: h.value });
    headers.push(
      { [LINEAGE.topic]: origin.lineage.topic },
      { [LINEAGE.partition]: origin.lineage.partition },
      { [LINEAGE.offset]: Buffer.from(String(origin.record.offset)) },
      // Released results number apart ('c0', 'c1', ...) from what their record's own processing sent.
      { [LINEAGE.seq]: Buffer.from(origin.released ? `c${origin.seq++}` : String(origin.seq++)) },
      { [LINEAGE.txn]: this.transactionHeader },
    );
    this.output.produce(r.topic, r.partition ?? null, r.value, r.key, r.timestamp ?? origin.record.timestamp, headers);
    this.countProduced(r.topic);
    if (this.deadLetterTopics.has(r.topic)) {
      const header = (k: string) => r.headers?.find((h) => h.key === k)?.value.toString() ?? 'unknown';
      this.context.stats.deadLettered++;
      this.context.emit({
        type: 'dead-lettered',
        stage: header(DEAD_LETTER.stage),
        code: header(DEAD_LETTER.code),
        topic: origin.record.topic,
        partition: origin.record.partition,
        offset: origin.record.offset,
      });
    }
  }

  private countProduced(topic: string): void {
    this.context.stats.recordsProduced++;
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
  if (m.headers && m.headers.length > 0) {
    const list: RecordHeader[] = [];
    for (const h of m.headers) {
      for (const k in h) {
        const v = h[k];
        if (v !== undefined) list.push({ key: k, value: typeof v === 'string' ? Buffer.from(v) : v });
      }
    }
    headers = list;
  }
  const key = m.key === undefined || m.key === null ? null : typeof m.key === 'string' ? Buffer.from(m.key) : m.key;
  return { topic: m.topic, partition: m.partition, offset: m.offset, key, value: m.value, timestamp: m.timestamp ?? Date.now(), headers };
}
