import type { KafkaConsumer, LibrdKafkaError, Message, Producer, TopicPartitionOffset } from '@confluentinc/kafka-javascript';
import type { AdminClient } from '../../src/kafka/admin.ts';
import { ERR, type RdConfig } from '../../src/kafka/clients.ts';
import type { ClientSupplier } from '../../src/runtime/base/client-supplier.ts';
import type { IncomingRecord, RecordCollector } from '../../src/core/records.ts';
import type { RuntimeTask, RuntimeTopology } from '../../src/runtime/task/worker-topology.ts';

// A broker in memory, for the worker's broker-free tests: partition logs, the group's committed
// offsets, and transactions whose records and offsets become visible only when they commit. Calls
// are logged in order so that a test can check the protocol's order, and any call can be made to fail.

type Callback = (err: LibrdKafkaError | null, value?: unknown) => void;

export function kafkaError(code: number, message: string, flags: { fatal?: boolean; retriable?: boolean; abortable?: boolean } = {}): LibrdKafkaError {
  return Object.assign(new Error(message), { code, origin: 'kafka', errno: code, isFatal: flags.fatal ?? false, isRetriable: flags.retriable ?? false, isTxnRequiresAbort: flags.abortable ?? false }) as unknown as LibrdKafkaError;
}

export const errors = {
  abortable: () => kafkaError(ERR.ERR_INVALID_TXN_STATE ?? -1, 'transaction requires abort', { abortable: true }),
  fenced: () => kafkaError(ERR.ERR__FENCED ?? -144, 'producer fenced by a newer instance', { fatal: true }),
  tooLarge: () => kafkaError(ERR.ERR_MSG_SIZE_TOO_LARGE ?? 10, 'Broker: Message size too large: ProduceRequest for out [0] with 1 message(s) failed', { abortable: true }),
  /** The coordinator is busy (a previous transaction still completing): the same call is worth repeating. */
  busy: () => kafkaError(ERR.ERR_CONCURRENT_TRANSACTIONS ?? 51, 'Broker: Producer attempted to update a transaction while another concurrent operation on the same transaction was ongoing', { retriable: true }),
  /** No flag and no known code: the outcome of the call is unknown. */
  unknown: () => kafkaError(ERR.ERR__TRANSPORT ?? -195, 'broker transport failure'),
};

interface Failure {
  readonly error: LibrdKafkaError;
  /** For commitTransaction: the commit lands at the coordinator, and only the answer is lost. */
  readonly landed?: boolean;
}

export interface OutputRecord {
  readonly topic: string;
  readonly key: string | null;
  readonly value: string | null;
  readonly headers: Readonly<Record<string, string>>;
}

export class FakeCluster {
  readonly calls: string[] = [];
  /** Consume calls that delivered records: how far ahead of processing the worker fetched. */
  fetches = 0;
  readonly logs = new Map<string, Message[]>();
  /** The group's committed offsets, by `topic-partition`. */
  readonly committed = new Map<string, number>();
  readonly outputs: OutputRecord[] = [];
  readonly producers: FakeProducer[] = [];
  readonly consumers: FakeConsumer[] = [];
  readonly topics = new Map<string, number>();
  /** Client ids of the group's members, as describeGroups reports them. */
  groupMembers: string[] = [];
  /** How long a commitTransaction takes (0: its answer comes on the next turn of the event loop). */
  commitDelayMs = 0;
  /** The one consumer group the fake knows (the worker's app id in these tests). */
  readonly groupId = 'app';
  private readonly failures = new Map<string, Failure[]>();

  constructor(topics: Record<string, number>) {
    for (const [topic, partitions] of Object.entries(topics)) this.topics.set(topic, partitions);
  }

  append(topic: string, partition: number, values: readonly string[]): void {
    const key = `${topic}-${partition}`;
    const log = this.logs.get(key) ?? [];
    for (const value of values) log.push({ topic, partition, offset: log.length, key: Buffer.from(value), value: Buffer.from(value), size: value.length, timestamp: 1_000 + log.length });
    this.logs.set(key, log);
  }

  /** The next call of `method` (on any client) fails with `error`. */
  failNext(method: string, error: LibrdKafkaError, opts: { landed?: boolean } = {}): void {
    const list = this.failures.get(method) ?? [];
    list.push({ error, ...opts });
    this.failures.set(method, list);
  }

  takeFailure(method: string): Failure | undefined {
    return this.failures.get(method)?.shift();
  }

  private readonly hangs = new Set<string>();
  /** Answers held back by hangNext, in call order: `release()` sends them. */
  private readonly held: (() => void)[] = [];

  /** The next call of `method` gets no answer until `release()` (librdkafka#5456: a call past its own timeout). */
  hangNext(method: string): void {
    this.hangs.add(method);
  }

  /** Whether this call of `method` hangs; its answer is then kept for `release`. */
  holdIfHung(method: string, answer: () => void): boolean {
    if (!this.hangs.delete(method)) return false;
    this.held.push(answer);
    return true;
  }

  release(): void {
    for (const answer of this.held.splice(0)) answer();
  }

  log(call: string): void {
    this.calls.push(call);
  }

  supplier(): ClientSupplier {
    return {
      consumer: async (config: RdConfig) => {
        const consumer = new FakeConsumer(this, config);
        this.consumers.push(consumer);
        return consumer as unknown as KafkaConsumer;
      },
      producer: async () => {
        const producer = new FakeProducer(this, this.producers.length);
        this.producers.push(producer);
        return producer as unknown as Producer;
      },
      withAdmin: async <T>(_bootstrap: string, fn: (admin: AdminClient) => Promise<T>) => fn(this.admin() as unknown as AdminClient),
    };
  }

  private admin() {
    return {
      listTopics: async () => [...this.topics.keys()],
      fetchTopicMetadata: async ({ topics }: { topics: string[] }) => topics.map((name) => ({ name, partitions: Array.from({ length: this.topics.get(name) ?? 0 }, (_, partition) => ({ partitionId: partition })) })),
      createTopics: async ({ topics }: { topics: { topic: string; numPartitions: number }[] }) => {
        for (const t of topics) this.topics.set(t.topic, t.numPartitions);
        return true;
      },
      listGroups: async () => ({ groups: this.groupMembers.length > 0 ? [{ groupId: this.groupId }] : [] }),
      describeGroups: async () => ({ groups: [{ members: this.groupMembers.map((clientId, i) => ({ memberId: `m${i}`, clientId, clientHost: `/10.0.0.${i}` })) }] }),
    };
  }

  /** Committed outputs as `value` strings of one topic. */
  values(topic: string): string[] {
    return this.outputs.filter((o) => o.topic === topic).map((o) => o.value ?? '');
  }
}

export class FakeProducer {
  private pending: OutputRecord[] = [];
  private offsets: TopicPartitionOffset[] = [];
  connected = true;

  constructor(
    private readonly cluster: FakeCluster,
    readonly id: number,
  ) {}

  private call(method: string, cb: Callback, action: () => void = () => undefined): void {
    this.cluster.log(`producer${this.id}.${method}`);
    const failure = this.cluster.takeFailure(method);
    const answer = () => {
      if (failure) {
        if (failure.landed) action();
        cb(failure.error);
        return;
      }
      action();
      cb(null);
    };
    if (this.cluster.holdIfHung(method, answer)) return;
    if (method === 'commitTransaction' && this.cluster.commitDelayMs > 0) setTimeout(answer, this.cluster.commitDelayMs);
    else setImmediate(answer);
  }

  initTransactions(_timeout: number, cb: Callback): void {
    this.call('initTransactions', cb);
  }
  beginTransaction(cb: Callback): void {
    this.call('beginTransaction', cb);
  }
  produce(topic: string, _partition: number | null, value: Buffer | null, key: Buffer | null, _timestamp: number, _opaque: unknown, headers?: Record<string, Buffer | string>[]): void {
    const flat: Record<string, string> = {};
    for (const h of headers ?? []) for (const [k, v] of Object.entries(h)) flat[k] = v.toString();
    this.pending.push({ topic, key: key?.toString() ?? null, value: value?.toString() ?? null, headers: flat });
  }
  sendOffsetsToTransaction(offsets: TopicPartitionOffset[], _consumer: unknown, _timeout: number, cb: Callback): void {
    this.call('sendOffsetsToTransaction', cb, () => (this.offsets = [...offsets]));
  }
  commitTransaction(_timeout: number, cb: Callback): void {
    this.call('commitTransaction', cb, () => {
      this.cluster.outputs.push(...this.pending);
      for (const o of this.offsets) this.cluster.committed.set(`${o.topic}-${o.partition}`, o.offset);
      this.pending = [];
      this.offsets = [];
    });
  }
  abortTransaction(_timeout: number, cb: Callback): void {
    this.call('abortTransaction', cb, () => {
      this.pending = [];
      this.offsets = [];
    });
  }
  flush(_timeout: number, cb: Callback): void {
    this.call('flush', cb, () => {
      this.cluster.outputs.push(...this.pending);
      this.pending = [];
    });
  }
  on(): this {
    return this;
  }
  disconnect(cb: () => void): void {
    this.cluster.log(`producer${this.id}.disconnect`);
    this.connected = false;
    this.pending = [];
    setImmediate(cb);
  }
}

type RebalanceCallback = (err: LibrdKafkaError, assignment: { topic: string; partition: number }[]) => void;

export class FakeConsumer {
  /** Fetch position of each assigned partition, by `topic-partition`. */
  readonly positions = new Map<string, number>();
  readonly seeks: TopicPartitionOffset[] = [];

  constructor(
    private readonly cluster: FakeCluster,
    private readonly config: RdConfig,
  ) {}

  /** What the group coordinator does on a rebalance: calls the worker's rebalance_cb. */
  rebalance(kind: 'assign' | 'revoke', partitions: { topic: string; partition: number }[]): void {
    const cb = this.config['rebalance_cb'] as unknown as RebalanceCallback;
    const code = kind === 'assign' ? ERR.ERR__ASSIGN_PARTITIONS : ERR.ERR__REVOKE_PARTITIONS;
    cb(kafkaError(code ?? 0, kind), partitions);
  }

  setDefaultConsumeTimeout(): void {}
  setDefaultIsTimeoutOnlyForFirstMessage(): void {}
  subscribe(): void {}

  consume(max: number, cb: (err: LibrdKafkaError | null, messages: Message[]) => void): void {
    const out: Message[] = [];
    for (const [key, position] of this.positions) {
      const log = this.cluster.logs.get(key) ?? [];
      const taken = log.slice(position, position + max - out.length);
      out.push(...taken);
      this.positions.set(key, position + taken.length);
    }
    if (out.length > 0) this.cluster.fetches++;
    setTimeout(() => cb(null, out), out.length > 0 ? 0 : 5);
  }

  committed(partitions: { topic: string; partition: number }[], _timeout: number, cb: Callback): void {
    this.cluster.log('consumer.committed');
    setImmediate(() => cb(null, partitions.map((p) => ({ ...p, offset: this.cluster.committed.get(`${p.topic}-${p.partition}`) ?? -1001 }))));
  }

  seek(tpo: TopicPartitionOffset, _timeout: number, cb: (err: LibrdKafkaError | null) => void): void {
    this.cluster.log(`consumer.seek ${tpo.topic}-${tpo.partition}@${tpo.offset}`);
    const failure = this.cluster.takeFailure('seek');
    if (failure) {
      setImmediate(() => cb(failure.error));
      return;
    }
    this.seeks.push(tpo);
    this.positions.set(`${tpo.topic}-${tpo.partition}`, Math.max(0, tpo.offset));
    setImmediate(() => cb(null));
  }

  commitSync(offsets: TopicPartitionOffset[]): void {
    this.cluster.log('consumer.commitSync');
    for (const o of offsets) this.cluster.committed.set(`${o.topic}-${o.partition}`, o.offset);
  }

  /** The worker's topologies here have no joins, so it asks for the cooperative-sticky assignor. */
  rebalanceProtocol(): string {
    return 'COOPERATIVE';
  }

  incrementalAssign(partitions: TopicPartitionOffset[]): void {
    this.cluster.log(`consumer.incrementalAssign ${partitions.map((p) => `${p.topic}-${p.partition}@${p.offset}`).join(',')}`);
    for (const p of partitions) this.positions.set(`${p.topic}-${p.partition}`, Math.max(0, p.offset));
  }

  incrementalUnassign(partitions: { topic: string; partition: number }[]): void {
    this.cluster.log(`consumer.incrementalUnassign ${partitions.map((p) => `${p.topic}-${p.partition}`).join(',')}`);
    for (const p of partitions) this.positions.delete(`${p.topic}-${p.partition}`);
  }

  /** What assignmentLost() answers in the next revoke: the session timed out and the partitions went elsewhere. */
  lost = false;

  assignmentLost(): boolean {
    return this.lost;
  }

  getWatermarkOffsets(topic: string, partition: number): { lowOffset: number; highOffset: number } {
    return { lowOffset: 0, highOffset: this.cluster.logs.get(`${topic}-${partition}`)?.length ?? 0 };
  }

  /** Changelogs the fake's producers wrote are not logs it serves: a task's restore finds them empty. */
  queryWatermarkOffsets(topic: string, partition: number, _timeout: number, cb: (err: LibrdKafkaError | null, offsets: { lowOffset: number; highOffset: number }) => void): void {
    setImmediate(() => cb(null, this.getWatermarkOffsets(topic, partition)));
  }

  disconnect(cb: () => void): void {
    this.cluster.log('consumer.disconnect');
    setImmediate(cb);
  }
}

/**
 * A task that counts records per key (its "store") and emits `value:count`; a rollback restores the
 * counts of the last commit. Every processed record is logged, so a test can see reprocessing.
 */
export class CountingTask implements RuntimeTask {
  readonly changelogs = [];
  readonly processed: string[] = [];
  counts = new Map<string, number>();
  private committedCounts = new Map<string, number>();
  rollbacks = 0;

  restore(): void {}

  process(record: IncomingRecord, collector: RecordCollector): void {
    const key = record.key?.toString() ?? '';
    this.processed.push(`${record.topic}-${record.partition}@${record.offset}`);
    const count = (this.counts.get(key) ?? 0) + 1;
    this.counts.set(key, count);
    collector.send({ topic: 'out', key: record.key, value: Buffer.from(`${key}:${count}`) });
  }

  commit(): void {
    this.committedCounts = new Map(this.counts);
  }

  rollback(): void {
    this.counts = new Map(this.committedCounts);
    this.rollbacks++;
  }
}

/**
 * A task that holds nothing across records: it copies each record to `out` as `value:1`, and notes for
 * each the input offset the group had committed when it ran (-1: none), so a test can see a record
 * processed while an earlier commit was still in flight.
 */
export class CopyTask implements RuntimeTask {
  readonly changelogs = [];
  readonly stateless = true;
  readonly processed: { readonly at: string; readonly committedThen: number; readonly fetchesThen: number }[] = [];

  constructor(private readonly cluster: FakeCluster) {}

  restore(): void {}

  process(record: IncomingRecord, collector: RecordCollector): void {
    const at = `${record.topic}-${record.partition}`;
    this.processed.push({ at: `${at}@${record.offset}`, committedThen: this.cluster.committed.get(at) ?? -1, fetchesThen: this.cluster.fetches });
    collector.send({ topic: 'out', key: record.key, value: Buffer.from(`${record.key?.toString() ?? ''}:1`) });
  }

  commit(): void {}
  rollback(): void {}
}

/** One sub-topology reading `in` and writing `out`, with CopyTasks the test can look at. */
export function copyTopology(cluster: FakeCluster): RuntimeTopology & { readonly tasks: CopyTask[] } {
  const tasks: CopyTask[] = [];
  return { ...countingTopology(), tasks, createTask: () => {
    const task = new CopyTask(cluster);
    tasks.push(task);
    return task;
  } };
}

/** One sub-topology reading `in` and writing `out`, with CountingTasks the test can look at. */
export function countingTopology(): RuntimeTopology & { readonly tasks: CountingTask[] } {
  const tasks: CountingTask[] = [];
  const topics = [
    { name: 'in', kind: 'source', internal: false, cleanupPolicy: 'delete' },
    { name: 'out', kind: 'sink', internal: false, cleanupPolicy: 'delete' },
  ] as const;
  return {
    appId: 'app',
    tasks,
    subtopologies: [{ id: 0, sourceTopics: ['in'] }],
    topics,
    serdeUsages: () => [],
    resolvePartitions: () => ({ topics }),
    totalRetryBudgetMs: () => 0,
    createTask: () => {
      const task = new CountingTask();
      tasks.push(task);
      return task;
    },
  };
}
