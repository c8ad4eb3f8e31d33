import type { TopicPartitionOffset } from '@confluentinc/kafka-javascript';
import { committedOffsets, seek } from '../../kafka/clients.ts';
import { formatCommitMetadata } from './commit-metadata.ts';
import { WorkerError } from '../base/errors.ts';
import { stepBackIfNamesakeLive, tooManyFencings, type InstanceGuardOptions } from './instance-guard.ts';
import { parsePartitionKey, partitionKey, type PartitionProgress } from '../base/partition-progress.ts';
import { producerMessageMaxBytes, type RecordTooLargeError } from '../../core/record-size.ts';
import type { WorkerRecordCollector } from './record-collector.ts';
import { RepartitionPurge } from './repartition-purge.ts';
import type { WorkerServices } from '../base/worker-services.ts';
import type { TaskManager } from '../task/task-manager.ts';
import { describeKafkaError, isFatalOrFencing, isFencing, recordTooLarge } from './kafka-errors.ts';
import type { TransactionalOutput, TransactionFailure } from './output.ts';

/** A refused batch is not a passing broker hiccup; a few tries only rule out a batch that happened to be assembled larger. */
const MAX_SIZE_REFUSALS = 3;

/**
 * One transaction across the tasks and the owned partitions: opens it for the first record, commits
 * it with the processed offsets, and after any failure puts tasks and partitions back where the last
 * committed transaction left them (the rules in partition-progress.ts), replacing the producer when
 * it cannot be trusted.
 */
export class TransactionDriver {
  private openedAt = 0;
  private records = 0;
  private fencedAt: number[] = [];
  /** Transactions in a row the broker refused for a record batch over a topic's max.message.bytes. */
  private sizeRefusals = 0;
  private readonly purge: RepartitionPurge;
  /** What must reach the open transaction before it commits: the answers of runs handed to processing threads (loop/record-path.ts). */
  private beforeCommit: () => Promise<void> = async () => undefined;

  constructor(
    private readonly services: WorkerServices,
    private readonly output: TransactionalOutput,
    private readonly tasks: TaskManager,
    private readonly progress: PartitionProgress,
    private readonly collector: WorkerRecordCollector,
    private readonly guard: InstanceGuardOptions,
  ) {
    this.purge = new RepartitionPurge(services, collector.repartitionTopics, (key) => tasks.owns(key));
  }

  get open(): boolean {
    return this.output.open;
  }

  /** Set once, by the record path: every commit first waits for what it handed to processing threads. */
  awaitBeforeCommit(step: () => Promise<void>): void {
    this.beforeCommit = step;
  }

  /** The open transaction has run for commitIntervalMs or holds maxRecordsPerTransaction records. */
  due(): boolean {
    const { config } = this.services;
    return this.output.open && (Date.now() - this.openedAt >= config.commitIntervalMs || this.records >= config.maxRecordsPerTransaction);
  }

  /**
   * Commit before the batch is through: the open transaction, with `unrecorded` records not yet passed to
   * `processed`, holds maxRecordsPerTransaction records or has run for half the transaction timeout. A
   * fetched batch is counted in messages, and a repartition topic's message carries hundreds of records
   * (core/record-batch.ts): a backlog of them, processed whole, outlived the timeout, the coordinator
   * aborted and fenced it, and the same batch failed the same way on every retry.
   */
  mustCommit(unrecorded: number): boolean {
    const { config } = this.services;
    return this.output.open && (this.records + unrecorded >= config.maxRecordsPerTransaction || Date.now() - this.openedAt >= config.transactionTimeoutMs / 2);
  }

  async ensureOpen(): Promise<void> {
    if (this.output.open) return;
    await this.output.begin();
    this.openedAt = Date.now();
    this.records = 0;
    this.services.faults('before-produce', { outputRecords: 0 });
  }

  /** `count` records of `partition` up to `lastOffset` went through its task: the next offset joins the open transaction. */
  processed(partition: { readonly key: string; readonly topic: string; readonly partition: number }, lastOffset: number, count: number): void {
    const pending = this.progress.pending.get(partition.key);
    if (pending === undefined) this.progress.pending.set(partition.key, { topic: partition.topic, partition: partition.partition, offset: lastOffset + 1 });
    else pending.offset = lastOffset + 1;
    this.records += count;
  }

  async commit(): Promise<void> {
    const consumer = this.services.consumer();
    if (!consumer || !this.output.open) return;
    // Before the offsets are read: the threads' answers move them on.
    await this.beforeCommit();
    const started = Date.now();
    const records = this.records;
    this.services.step('commit');
    const span = this.services.tracer?.commitStarted(records);
    const outcome = await this.output.commit({ offsets: this.offsetsToCommit(), consumer, prepare: () => this.tasks.prepareCommit(this.collector.commitCollector) });
    span?.end(outcome.committed ? 'committed' : outcome.failure.kind === 'replace' && isFatalOrFencing(outcome.failure.error) ? 'fenced' : 'aborted');
    if (!outcome.committed) {
      await this.recover(outcome.failure);
      return;
    }
    this.markCommitted();
    this.purge.afterCommit(this.progress.committed);
    if (outcome.announced) this.services.emit({ type: 'committed', records, ms: Date.now() - started });
    this.services.step('commit: after commit');
    await this.tasks.afterCommit();
  }

  /** At the worker's close: a repartition purge in flight ends first. */
  async close(): Promise<void> {
    await this.purge.close();
  }

  async abort(reason: string): Promise<void> {
    if (this.output.open) {
      this.services.step('abort');
      const failure = await this.output.abort();
      if (failure) {
        await this.replaceAfterFailure(failure.error);
        return;
      }
    }
    await this.rewind(reason);
  }

  /** A call that put records into the transaction (or opened it) failed with a Kafka error. */
  async failed(e: unknown): Promise<void> {
    await this.recover(this.output.failed(e));
  }

  /** Seeks each unsettled partition to its committed offset; one that cannot be sought now stays unsettled (rule 2). */
  async settlePartitions(): Promise<void> {
    const consumer = this.services.consumer();
    if (!consumer) return;
    for (const key of [...this.progress.unsettled]) {
      if (!this.tasks.owns(key)) {
        this.progress.forget(key);
        continue;
      }
      try {
        this.services.step('seek');
        await seek(consumer, this.progress.rewindTarget(key), 10_000);
        this.progress.settled(key);
      } catch (e) {
        // Retried before the next fetch; until then none of its records is processed. Reported, since a
        // partition whose seek keeps failing makes no progress while the worker otherwise looks alive.
        const { topic, partition } = parsePartitionKey(key);
        this.services.emit({ type: 'seek-failed', partition: `${topic}-${partition}`, reason: describeKafkaError(e) });
      }
    }
  }

  private offsetsToCommit(): TopicPartitionOffset[] {
    const at = Date.now();
    const by = this.services.transactionalId;
    return [...this.progress.pending].map(([key, o]) => ({ ...o, metadata: formatCommitMetadata({ by, at, streamTime: this.tasks.streamTimeOf(key) }) }));
  }

  private markCommitted(): void {
    this.progress.markCommitted();
    this.tasks.committed();
    this.sizeRefusals = 0;
    this.services.stats.transactionsCommitted++;
    this.services.stats.lastCommitAt = Date.now();
  }

  private async recover(failure: TransactionFailure): Promise<void> {
    switch (failure.kind) {
      case 'rolled-back':
        await this.rewind(failure.reason);
        return;
      case 'abortable':
        await this.abort(`transaction aborted: ${describeKafkaError(failure.error)}`);
        this.failIfTopicRefusesRecordSize(failure.error);
        return;
      case 'replace':
        await this.replaceAfterFailure(failure.error);
        // librdkafka refusing a record over its message.max.bytes inside produce() comes here.
        this.failIfTopicRefusesRecordSize(failure.error);
    }
  }

  /** Roll the tasks back to their last commit and put every owned partition back at its committed offset. */
  private async rewind(reason: string): Promise<void> {
    this.tasks.rolledBack();
    this.services.tracer?.rolledBack();
    this.progress.unsettle(this.tasks.ownedPartitions());
    this.services.stats.transactionsAborted++;
    this.services.emit({ type: 'aborted', reason });
    await this.settlePartitions();
  }

  /** Fatal, or unknown: this producer cannot be trusted. Whether the last commit landed is read back, never assumed. */
  private async replaceAfterFailure(e: unknown): Promise<void> {
    const reason = describeKafkaError(e);
    if (isFatalOrFencing(e)) {
      this.services.stats.fencings++;
      this.services.emit({ type: 'fenced', reason });
      // Before the producer is replaced: a new one would fence the namesake in turn.
      this.services.step('fenced: namesake check');
      if (isFencing(e)) await stepBackIfNamesakeLive(this.guard, e);
      const now = Date.now();
      this.fencedAt = [...this.fencedAt.filter((t) => now - t < 60_000), now];
      if (this.fencedAt.length >= 4) throw tooManyFencings(this.guard, this.fencedAt.length, e);
    }
    this.services.step('replace producer');
    await this.output.replace();
    this.services.emit({ type: 'aborted', reason: `producer replaced: ${reason}` });
    await this.resolveAmbiguousCommit();
  }

  /**
   * After the producer was replaced: the last transaction's outcome is read back from the group's
   * committed offsets of every owned partition, and every owned partition is then sought to what was
   * read (rules 1 and 5 in partition-progress.ts), whether the transaction landed or not.
   */
  private async resolveAmbiguousCommit(): Promise<void> {
    const consumer = this.services.consumer();
    const pending = [...this.progress.pending.values()];
    const owned = [...this.tasks.ownedPartitions()].map(parsePartitionKey);
    let readBack: Awaited<ReturnType<typeof committedOffsets>> | undefined;
    this.services.step('read back committed offsets');
    for (let attempt = 1; consumer && owned.length > 0 && readBack === undefined && attempt <= 3; attempt++) {
      readBack = await committedOffsets(consumer, owned, 30_000).catch(() => undefined);
    }
    const landed = readBack !== undefined && pending.length > 0 && pending.every((p) => readBack.some((c) => c.topic === p.topic && c.partition === p.partition && c.offset === p.offset));
    if (landed) this.markCommitted();
    // Unread, the local view stands: it is what this worker last saw committed, so at worst a landed transaction is repeated, never skipped.
    for (const c of readBack ?? []) this.progress.committed.set(partitionKey(c.topic, c.partition), c.offset >= 0 ? c.offset : undefined);
    if (!landed) {
      await this.rewind(pending.length === 0 ? 'transaction dropped' : 'transaction did not commit');
      return;
    }
    this.progress.unsettle(this.tasks.ownedPartitions());
    await this.settlePartitions();
  }

  /**
   * The broker measures a record batch against the topic's own max.message.bytes, which librdkafka
   * does not know and cannot split for: the same batch is refused on every replay, so the worker
   * would abort forever. After a few refusals in a row it stops with the topic named and nothing of
   * the refused transactions committed.
   */
  private failIfTopicRefusesRecordSize(e: unknown): void {
    const refused = recordTooLarge(e);
    if (!refused) {
      this.sizeRefusals = 0;
      return;
    }
    if (++this.sizeRefusals < MAX_SIZE_REFUSALS) return;
    const { topic } = refused;
    throw recordTooLargeForTopic(
      `the broker refused ${this.sizeRefusals} transactions in a row: a record batch for ${topic === undefined ? 'an output topic' : `topic ${topic}`} is over that topic's max.message.bytes (which the worker could not learn at start, or which was lowered since), or a record is over the producer's message.max.bytes (${producerMessageMaxBytes(this.services.config.kafka)}). Nothing of them was committed. Set kafka.message.max.bytes and kafka.batch.size at or below the topic's max.message.bytes (larger records are then dead-lettered as RECORD_TOO_LARGE), or raise the topic's limit`,
      e,
    );
  }

  /**
   * A dead letter the dead-letter topic cannot take even as an excerpt (deadLetterBody in
   * core/record-size.ts): the record can be neither written nor set aside, and skipping it silently
   * would lose it, so the worker stops with nothing past the last commit committed.
   */
  deadLetterRefused(e: RecordTooLargeError): WorkerError {
    return recordTooLargeForTopic(
      `a record could not be dead-lettered: even an excerpt of it (${e.bytes} bytes with its own and the error headers) is over the ${e.limit} bytes a record for the dead-letter topic ${e.topic} may carry. Nothing past the last commit was committed. Raise that topic's max.message.bytes (and kafka.message.max.bytes if it is the lower), or make the record's headers smaller`,
      e,
    );
  }
}

/** The one place the worker stops with RECORD_TOO_LARGE_FOR_TOPIC: a size limit that no replay gets past. */
function recordTooLargeForTopic(message: string, cause: unknown): WorkerError {
  return new WorkerError('RECORD_TOO_LARGE_FOR_TOPIC', message, { cause });
}
