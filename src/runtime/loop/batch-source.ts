import type { KafkaConsumer, Message } from '@confluentinc/kafka-javascript';
import { isRecordBatch } from '../../core/record-batch.ts';
import type { IncomingRecord } from '../../core/records.ts';
import type { RunResult } from '../offload/offloaded-tasks.ts';
import type { ProcessingThread } from '../offload/processing-thread.ts';
import type { ThreadPool } from '../offload/thread-pool.ts';
import { packRun } from '../offload/record-transfer.ts';
import type { TaskManager } from '../task/task-manager.ts';
import { isEmptyFetch } from '../transaction/kafka-errors.ts';
import type { TransactionDriver } from '../transaction/driver.ts';
import type { WorkerEvent, WorkerStats } from '../base/worker-events.ts';
import { TimeOrderedBatch } from './batch-order.ts';
import type { InputSynchronizer } from './input-synchronizer.ts';
import type { PartitionProgress } from '../base/partition-progress.ts';
import type { WorkerRecordCollector } from '../transaction/record-collector.ts';
import { Speculation } from './speculation.ts';

/** A partition's records handed to the processing thread, kept to send its outputs with their origins. */
export interface OffloadedRun {
  readonly key: string;
  readonly records: readonly IncomingRecord[];
}

/** What the processing thread made of a batch's offloaded runs, in the order of `entries`. */
export interface OffloadedResults {
  readonly entries: readonly OffloadedRun[];
  readonly results: readonly RunResult[];
}

interface Offloaded {
  readonly entries: readonly OffloadedRun[];
  readonly keys: ReadonlySet<string>;
  /** Undefined when the thread could not process them. */
  readonly results: Promise<readonly RunResult[] | undefined>;
}

interface Prefetch {
  readonly batch: Promise<Message[]>;
  /** The partition epoch the batch was fetched under. */
  readonly epoch: number;
  /** Rebalances the worker had handled when the fetch started. */
  readonly rebalances: number;
  readonly speculation: Promise<Speculation | undefined>;
}

/**
 * One fetched batch and what was already computed of it: by speculation while the last commit was in
 * flight, by the processing thread since it was fetched. `ready` is what of it (and of records held back
 * before) the input synchronizer lets go now. The record path (record-path.ts) takes it from here,
 * whichever way each record was computed.
 */
export interface FetchedBatch {
  readonly messages: Message[];
  readonly ready: readonly Message[];
  readonly speculation: Speculation | undefined;
  /** Resolves to the processing thread's results for the batch, or undefined when it computed none. */
  offloaded(): Promise<OffloadedResults | undefined>;
}

export interface BatchSourceParts {
  readonly consumer: KafkaConsumer;
  readonly consumeBatchSize: number;
  readonly tasks: TaskManager;
  readonly collector: WorkerRecordCollector;
  readonly progress: PartitionProgress;
  readonly transaction: TransactionDriver;
  readonly synchronizer: InputSynchronizer;
  readonly stats: Readonly<WorkerStats>;
  readonly emit: (event: WorkerEvent) => void;
  /** Whether the loop still runs (it stops taking batches once it does not). */
  readonly looping: () => boolean;
}

/**
 * Where the loop's batches come from. The consume call runs off the main thread, so the next batch is
 * fetched while the loop processes the current one or waits on a commit (prefetch); while a commit is
 * in flight its stateless tasks' records are run ahead (speculation.ts); as soon as a batch is fetched
 * its stateless runs go to the processing thread (offload/). Each is a way of computing a batch sooner,
 * none a second record path: the loop asks for the next batch and hands it to the record path.
 */
export class BatchSource {
  private prefetched: Prefetch | undefined;
  private readonly offloadedBatches = new WeakMap<Message[], Offloaded>();
  /** Threads whose death was told (a `processing-thread` event), once each. */
  private readonly reportedDead = new WeakSet<ProcessingThread>();

  constructor(
    private readonly parts: BatchSourceParts,
    /** The processing threads, once started. */
    private threads: ThreadPool | undefined,
  ) {}

  /** The consume call a commit started ends first: nothing else may act on the consumer meanwhile. */
  async endPrefetch(): Promise<Prefetch | undefined> {
    const prefetched = this.prefetched;
    this.prefetched = undefined;
    if (prefetched !== undefined) {
      await prefetched.batch.catch(() => undefined);
      await prefetched.speculation;
    }
    return prefetched;
  }

  /** The next batch: the prefetched one if still valid, else a fresh fetch. A failed consume call throws here. */
  async next(prefetched: Prefetch | undefined): Promise<FetchedBatch> {
    const { parts } = this;
    const messages = prefetched === undefined ? await this.fetch() : await this.keepPrefetched(prefetched);
    const speculation = prefetched !== undefined && messages.length > 0 ? this.adoptable(await prefetched.speculation) : undefined;
    // Before the next consume call starts: it moves the positions the synchronizer reads lag from.
    const ready = parts.synchronizer.admit(messages);
    if (messages.length > 0) this.prefetch();
    return { messages, ready, speculation, offloaded: () => this.offloadedResults(messages) };
  }

  /**
   * Commits while the consumer fetches the next batch: the loop would otherwise sit idle through the
   * commit's round trips (offsets to the group coordinator, EndTxn and its markers) and then wait for
   * the fetch. The batch is only read once the commit is done, so nothing of it joins this transaction.
   */
  async commitWhileFetching(): Promise<void> {
    const { batch, epoch, rebalances } = this.prefetch();
    let committed = false;
    const committing = this.parts.transaction.commit().finally(() => (committed = true));
    const speculation = this.speculate(batch, new Speculation(epoch, rebalances), () => committed);
    // A failure while speculating drops the speculation: the batch is then processed as usual, and fails there.
    this.prefetched = { batch, epoch, rebalances, speculation: speculation.catch(() => undefined) };
    await committing;
  }

  /** A consume call still in flight ends before its consumer is disconnected; the thread stops. */
  async close(): Promise<void> {
    await this.prefetched?.batch.catch(() => undefined);
    await this.prefetched?.speculation;
    this.prefetched = undefined;
    await this.threads?.close();
    this.threads = undefined;
  }

  /**
   * Starts fetching the next batch unless a fetch is under way. Not while a partition is unsettled: its
   * seek, before the next fetch, would drop this batch (rule 1 of partition-progress.ts), and the loop
   * has no use for records it must read again.
   */
  private prefetch(): Prefetch {
    if (this.prefetched !== undefined) return this.prefetched;
    const { progress, stats } = this.parts;
    const batch = progress.unsettled.size > 0 ? Promise.resolve([]) : this.fetch();
    // Read (and its failure handled) by the loop, or awaited by close.
    batch.catch(() => undefined);
    this.prefetched = { batch, epoch: progress.epoch, rebalances: stats.rebalances, speculation: Promise.resolve(undefined) };
    return this.prefetched;
  }

  /** The next batch from the consumer, its offloadable runs already on their way to the processing thread. */
  private async fetch(): Promise<Message[]> {
    const messages = await consumeBatchOrEmpty(this.parts.consumer, this.parts.consumeBatchSize);
    this.offload(messages);
    return messages;
  }

  /**
   * The prefetched batch if nothing moved since it was fetched. A commit that failed rewound the
   * partitions, a rebalance reassigned them, a seek settled one: records fetched before any of these
   * may lie behind the positions now in force, so that batch is dropped, and since fetching it moved
   * every owned partition's position on, each is sought back to its committed offset (rules 1–3 of
   * partition-progress.ts) before the next fetch.
   */
  private async keepPrefetched(prefetched: Prefetch): Promise<Message[]> {
    const { progress, transaction, tasks } = this.parts;
    if (prefetched.epoch === progress.epoch) return prefetched.batch;
    // Unsettling forgets the open transaction's offsets: what it processed commits first, so that the
    // seek back to the committed offsets does not read those records into it a second time.
    if (transaction.open) await transaction.commit();
    progress.unsettle(tasks.ownedPartitions());
    return [];
  }

  /**
   * Runs the stateless tasks' records of the batch while the commit is in flight, their outputs kept
   * in `speculation` (speculation.ts). Yields between partitions so that the commit's own steps go on.
   */
  private async speculate(fetched: Promise<Message[]>, speculation: Speculation, committed: () => boolean): Promise<Speculation | undefined> {
    const messages = await fetched.catch(() => []);
    if (messages.length === 0 || committed()) return undefined;
    const { tasks, progress, collector } = this.parts;
    // A stateless task's records need no event-time order across partitions (nothing they do depends on
    // another partition's): each partition's run goes through whole, in its own order.
    const offloaded = this.offloadedBatches.get(messages)?.keys;
    for (const run of new TimeOrderedBatch(messages).runs) {
      const task = tasks.taskFor(run.key);
      if (task?.stateless !== true || !progress.mayProcess(run.key) || offloaded?.has(run.key) === true) continue;
      let records = 0;
      for (let i = 0; i < run.messages.length; i++) {
        const message = run.messages[i]!;
        for (const record of collector.batched(message) ?? [collector.incoming(message)]) {
          records++;
          const result = task.process(record, speculation.aim(record));
          if (result) await result;
        }
      }
      speculation.partitions.add(run.key);
      speculation.processed.push({ run, lastOffset: run.messages[run.messages.length - 1]!.offset, records });
      await new Promise(setImmediate);
    }
    return speculation.partitions.size > 0 ? speculation : undefined;
  }

  /** A speculation the loop may take over: the commit it overlapped landed and nothing moved since the batch was fetched. */
  private adoptable(speculation: Speculation | undefined): Speculation | undefined {
    if (speculation === undefined) return undefined;
    const { progress, stats, transaction, looping } = this.parts;
    const unchanged = speculation.epoch === progress.epoch && speculation.rebalances === stats.rebalances && !transaction.open;
    return unchanged && looping() ? speculation : undefined;
  }

  /**
   * Hands the batch's runs of stateless tasks the processing thread can run to it, as soon as the batch
   * is fetched: the thread works on them while the main thread still produces the previous batch's outputs.
   */
  private offload(messages: Message[]): void {
    const threads = this.threads;
    if (threads === undefined || messages.length === 0) return;
    const { tasks, collector } = this.parts;
    const byThread = new Map<ProcessingThread, { requests: Parameters<ProcessingThread['process']>[0][number][]; entries: OffloadedRun[] }>();
    for (const run of new TimeOrderedBatch(messages).runs) {
      const task = tasks.taskFor(run.key);
      if (task?.stateless !== true || task.subtopology === undefined || !threads.offloadable.has(task.subtopology)) continue;
      // A repartition topic's record batch is one offset for many records: the main thread unpacks those.
      if (run.messages.some((m) => isRecordBatch(m.headers))) continue;
      const thread = threads.threadForRun(run.partition);
      if (thread === undefined) return;
      let share = byThread.get(thread);
      if (share === undefined) byThread.set(thread, (share = { requests: [], entries: [] }));
      const records = run.messages.map((m) => collector.incoming(m));
      share.requests.push({ subtopology: task.subtopology, run: packRun(run.topic, run.partition, records), streamTime: task.streamTime ?? Number.NEGATIVE_INFINITY });
      share.entries.push({ key: run.key, records });
    }
    if (byThread.size === 0) return;
    const shares = [...byThread];
    const entries = shares.flatMap(([, share]) => share.entries);
    // The shares' results in the order of `entries`; one thread that died leaves the whole batch to the main thread.
    const results = Promise.all(shares.map(([thread, share]) => thread.process(share.requests))).then((each) => (each.some((r) => r === undefined) ? undefined : each.flatMap((r) => r!)));
    this.offloadedBatches.set(messages, { entries, keys: new Set(entries.map((e) => e.key)), results });
  }

  /** The thread's results for the batch's offloaded runs; a thread that died leaves them to the main thread, said once. */
  private async offloadedResults(messages: Message[]): Promise<OffloadedResults | undefined> {
    const offloaded = this.offloadedBatches.get(messages);
    if (offloaded === undefined) return undefined;
    this.offloadedBatches.delete(messages);
    const results = await offloaded.results;
    if (results !== undefined) return { entries: offloaded.entries, results };
    const dead = this.threads?.threads.find((t) => !t.alive && !this.reportedDead.has(t));
    if (dead !== undefined) {
      this.reportedDead.add(dead);
      this.parts.emit({ type: 'processing-thread', subtopologies: [], off: dead.failure ?? 'stopped', failed: true });
    }
    return undefined;
  }
}

function consumeBatchOrEmpty(consumer: KafkaConsumer, max: number): Promise<Message[]> {
  return new Promise((resolve, reject) =>
    consumer.consume(max, (err, messages) => {
      if (err && !isEmptyFetch(err)) reject(err);
      else resolve(messages ?? []);
    }),
  );
}
