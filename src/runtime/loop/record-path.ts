import type { Message } from '@confluentinc/kafka-javascript';
import type { IncomingRecord, RecordCollector } from '../../core/records.ts';
import { forEachOutput } from '../offload/record-transfer.ts';
import type { TaskAnswer } from '../offload/task-messages.ts';
import { ThreadTask } from '../offload/thread-task.ts';
import type { TaskManager } from '../task/task-manager.ts';
import type { TransactionDriver } from '../transaction/driver.ts';
import type { FetchedBatch, OffloadedResults } from './batch-source.ts';
import { TimeOrderedBatch } from './batch-order.ts';
import type { PartitionProgress, PartitionRef } from '../base/partition-progress.ts';
import type { WorkerRecordCollector } from '../transaction/record-collector.ts';

/** A run handed to a task on a processing thread, and the answer the record path waits for before the next commit. */
interface HostedRun {
  readonly task: ThreadTask;
  readonly run: PartitionRef & { readonly key: string };
  readonly lastOffset: number;
  readonly records: number;
  readonly answer: Promise<TaskAnswer | undefined>;
}

export interface RecordPathParts {
  readonly tasks: TaskManager;
  readonly collector: WorkerRecordCollector;
  readonly progress: PartitionProgress;
  readonly transaction: TransactionDriver;
  /** Whether the loop still runs: a commit made while it stops ends the batch there. */
  readonly looping: () => boolean;
}

/**
 * The one way a batch's records reach Kafka: into the open transaction, with their offsets. What the
 * batch source computed ahead (speculation, the processing thread) is sent as it was computed; the
 * rest runs through its task here, in event-time order across partitions (batch-order.ts). A
 * transaction that grows past its bound commits mid-batch. Every path records its progress with one
 * call (`done`), so an exactly-once rule lives in one place.
 */
export class RecordPath {
  /** Runs handed to tasks on processing threads, in the order they were handed: applied before anything commits. */
  private hosted: HostedRun[] = [];

  constructor(private readonly parts: RecordPathParts) {}

  async process(batch: FetchedBatch): Promise<void> {
    // What an earlier batch that failed left in flight is undone by the rollback its failure caused.
    this.hosted = [];
    const { transaction, collector } = this.parts;
    const speculation = batch.speculation;
    if (speculation !== undefined) {
      if (!transaction.open) await transaction.ensureOpen();
      collector.sendSpeculated(speculation);
      for (const { run, lastOffset, records } of speculation.processed) this.done(run, lastOffset, records);
    }
    const offloaded = await this.applyOffloaded(await batch.offloaded());
    if (offloaded === false) return;
    const ordered = new TimeOrderedBatch(batch.ready);
    for (let slice = ordered.next(); slice !== undefined; slice = ordered.next()) {
      const { run, to } = slice;
      if (speculation?.partitions.has(run.key) === true) continue;
      // Records the processing thread processed are done; the main thread takes over from the first it did not.
      const from = Math.max(slice.from, offloaded.get(run.key) ?? 0);
      if (from >= to) continue;
      if (!(await this.runSlice(run, run.messages, from, to))) return;
    }
    await this.applyHosted();
  }

  /**
   * Runs `messages[from, to)` of one partition through its task. False when the loop must let go of
   * the batch (a mid-batch commit failed, or the worker is stopping).
   */
  private async runSlice(run: PartitionRef & { readonly key: string }, messages: readonly Message[], from: number, to: number): Promise<boolean> {
    const { tasks, progress, transaction, collector } = this.parts;
    const task = tasks.taskFor(run.key);
    // A record of a partition revoked after the fetch (its next owner reads it), or of one whose
    // position is not yet back at its committed offset (it is read again once it is).
    if (!task || !progress.mayProcess(run.key)) return true;
    if (!transaction.open) await transaction.ensureOpen();
    if (task instanceof ThreadTask) {
      this.handToThread(task, run, messages, from, to);
      return true;
    }
    let records = 0;
    for (let i = from; i < to; i++) {
      const message = messages[i]!;
      const batched = collector.batched(message);
      if (batched === undefined) {
        records++;
        const record = collector.incoming(message);
        const result = task.process(record, collector.sinkFor(record));
        if (result) await result;
      } else {
        // A batch is one offset: all of its records are processed in this transaction, or none.
        records += batched.length;
        for (const record of batched) {
          const result = task.process(record, collector.sinkFor(record));
          if (result) await result;
        }
      }
      if (i + 1 < to && transaction.mustCommit(records)) {
        this.done(run, message.offset, records);
        records = 0;
        if (!(await this.commitMidBatch())) return false;
      }
    }
    // Once per slice: a failure inside it aborts the transaction, and these offsets with it.
    this.done(run, messages[to - 1]!.offset, records);
    return true;
  }

  /**
   * Hands `messages[from, to)` to the processing thread hosting their task without waiting: the main
   * thread goes on with other tasks' records, and the thread computes this run meanwhile.
   */
  private handToThread(task: ThreadTask, run: PartitionRef & { readonly key: string }, messages: readonly Message[], from: number, to: number): void {
    const { collector } = this.parts;
    const records: IncomingRecord[] = [];
    for (let i = from; i < to; i++) {
      const message = messages[i]!;
      const batched = collector.batched(message);
      if (batched === undefined) records.push(collector.incoming(message));
      else for (const record of batched) records.push(record);
    }
    if (records.length === 0) return;
    this.hosted.push({ task, run, lastOffset: messages[to - 1]!.offset, records: records.length, answer: task.processRun(records) });
  }

  /**
   * What the threads made of the runs handed to them, into the open transaction with their offsets, in
   * the order they were handed. Before any commit: a run a thread processed belongs to the transaction
   * its store writes go to, and those reach the changelog at that transaction's prepareCommit.
   */
  private async applyHosted(): Promise<void> {
    const hosted = this.hosted;
    this.hosted = [];
    for (const { task, run, lastOffset, records, answer } of hosted) {
      task.applyRun(await answer);
      this.done(run, lastOffset, records);
    }
  }

  /**
   * Sends what the processing thread made of the batch's offloaded runs into the open transaction, with
   * their offsets, as processing them here would have (the same checks decide whether a run is
   * processed at all). Returns, per run, how many of its records are done (the main thread processes
   * the rest: a record whose stage threw on the thread, and those after it), or false when the loop
   * must let go of the batch.
   */
  private async applyOffloaded(offloaded: OffloadedResults | undefined): Promise<ReadonlyMap<string, number> | false> {
    const done = new Map<string, number>();
    if (offloaded === undefined) return done;
    const { tasks, progress, transaction, collector } = this.parts;
    for (let i = 0; i < offloaded.entries.length; i++) {
      const { key, records } = offloaded.entries[i]!;
      const result = offloaded.results[i]!;
      const task = tasks.taskFor(key);
      if (task?.stateless !== true || !progress.mayProcess(key)) continue;
      done.set(key, result.processed);
      if (result.processed === 0) continue;
      if (!transaction.open) await transaction.ensureOpen();
      let current = -1;
      let sink: RecordCollector | undefined;
      forEachOutput(result.outputs, (output, input) => {
        if (input !== current) sink = collector.sinkFor(records[(current = input)]!);
        sink!.send(output);
      });
      const first = records[0]!;
      this.done({ key, topic: first.topic, partition: first.partition }, records[result.processed - 1]!.offset, result.processed);
      if (result.streamTime > (task.streamTime ?? Number.NEGATIVE_INFINITY)) await task.advanceStreamTime?.(result.streamTime, collector.sinkFor(records[result.processed - 1]!));
      if (transaction.mustCommit(0) && !(await this.commitMidBatch())) return false;
    }
    return done;
  }

  /** A partition's records up to `lastOffset` are processed in the open transaction: its offset and the topic's count move on together. */
  private done(partition: PartitionRef & { readonly key: string }, lastOffset: number, records: number): void {
    this.parts.transaction.processed(partition, lastOffset, records);
    this.parts.collector.consumed(partition.topic, records);
  }

  /** Commits a transaction that reached its bound; false when the loop must let go of the batch (a failed commit rewound the partitions, or the worker is stopping). */
  private async commitMidBatch(): Promise<boolean> {
    const { progress, transaction, looping } = this.parts;
    await this.applyHosted();
    const epoch = progress.epoch;
    await transaction.commit();
    // A failed commit rewound the partitions: the rest of the batch is fetched again from the committed offsets.
    if (progress.epoch !== epoch || !looping()) return false;
    await transaction.ensureOpen();
    return true;
  }

  /**
   * Runs the wall-clock punctuations now due, in the open transaction (opened for them if need be), so
   * that what they emit and write commits or aborts with it, like what records cause.
   */
  async punctuate(): Promise<void> {
    const { tasks, transaction, collector } = this.parts;
    const now = Date.now();
    const due = tasks.wallClockDue(now);
    if (due.length === 0) return;
    if (!transaction.open) await transaction.ensureOpen();
    for (const task of due) {
      // Every output of a punctuation is sent with its origin (a record of its own), as released results are.
      const result = task.punctuateWallClock?.(now, collector.commitCollector);
      if (result) await result;
    }
  }
}
