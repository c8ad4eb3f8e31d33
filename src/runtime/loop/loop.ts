import { setTimeout as sleep } from 'node:timers/promises';
import { RecordTooLargeError } from '../../core/record-size.ts';
import type { ThreadPool } from '../offload/thread-pool.ts';
import { ProcessingThreadDiedError } from '../offload/task-messages.ts';
import { describeKafkaError } from '../transaction/kafka-errors.ts';
import { isKafkaError } from '../../kafka/clients.ts';
import { isTransient } from '../../core/stage-errors.ts';
import type { LoopWatch } from './loop-watch.ts';
import { BatchSource, type BatchSourceParts, type FetchedBatch } from './batch-source.ts';
import { RecordPath } from './record-path.ts';

export interface LoopParts extends BatchSourceParts {
  /** Names the step the loop is in, so that one that never ends is reported (loop-watch.ts). */
  readonly watch: LoopWatch;
  /** A rebalance the consumer signalled and the loop has not handled yet. */
  readonly rebalancePending: () => boolean;
  readonly rebalance: () => Promise<void>;
  /** Makes again and restores the tasks a processing thread that died hosted (rebalance.ts replaceLost). */
  readonly replaceLost: (why: string) => Promise<void>;
  /** Applies the global tables' updates since the last call; never waits for one. */
  readonly pollGlobalTables: () => Promise<unknown>;
}

/**
 * The worker's loop, read top to bottom: the next batch from the batch source, through the record
 * path into the open transaction, the punctuations due, and a commit when one is due (overlapped with
 * the next fetch). Recovery is one call (`recovered`); the rules of where a partition stands are
 * partition-progress.ts's, the transaction's are transaction/driver.ts's.
 */
export class Loop {
  readonly source: BatchSource;
  private readonly path: RecordPath;
  private transientFailures = 0;

  constructor(
    private readonly parts: LoopParts,
    threads: ThreadPool | undefined,
  ) {
    this.source = new BatchSource(parts, threads);
    this.path = new RecordPath(parts);
  }

  /** Runs until the worker stops looping, then commits what is open; throws on an unrecoverable error. */
  async run(): Promise<void> {
    const { watch, looping, progress, transaction } = this.parts;
    while (looping()) {
      watch.enter('end-prefetch');
      const prefetched = await this.source.endPrefetch();
      if (this.parts.rebalancePending()) await this.parts.rebalance();
      watch.enter('global-tables');
      await this.parts.pollGlobalTables();
      if (progress.unsettled.size > 0) await transaction.settlePartitions();
      let batch: FetchedBatch;
      try {
        watch.enter(prefetched === undefined ? 'consume' : 'keep-prefetched');
        batch = await this.source.next(prefetched);
      } catch (e) {
        this.parts.emit({ type: 'aborted', reason: `consume failed: ${describeKafkaError(e)}` });
        await sleep(100);
        continue;
      }
      watch.enter('process');
      if ((batch.messages.length > 0 || batch.ready.length > 0) && !(await this.recovered(() => this.path.process(batch), true))) continue;
      watch.enter('punctuate');
      if (!(await this.recovered(() => this.path.punctuate(), false))) continue;
      if (transaction.due()) {
        watch.enter('commit');
        await this.source.commitWhileFetching();
      }
    }
    watch.enter('final commit');
    if (transaction.open) await transaction.commit();
  }

  /**
   * Runs a step of the loop; true if it succeeded. A Kafka error aborts the transaction and rewinds
   * (false: the loop reads again); a transient one (the schema registry away, `retryTransient`) drops
   * the attempt whole and backs off; anything else ends the loop.
   */
  private async recovered(step: () => Promise<void>, retryTransient: boolean): Promise<boolean> {
    const { transaction } = this.parts;
    try {
      await step();
      if (retryTransient) this.transientFailures = 0;
      return true;
    } catch (e) {
      if (retryTransient && isTransient(e)) {
        // Not the record's fault: drop this attempt whole and read again.
        await transaction.abort(`transient failure, retrying: ${describeKafkaError(e)}`);
        await sleep(Math.min(5_000, 250 * 2 ** Math.min(this.transientFailures++, 5)));
        return false;
      }
      if (e instanceof RecordTooLargeError) throw transaction.deadLetterRefused(e);
      if (e instanceof ProcessingThreadDiedError) {
        // The dead thread's tasks lost what this transaction wrote to their stores: it aborts, and they restore.
        await transaction.abort(e.message);
        await this.parts.replaceLost(e.message);
        return false;
      }
      if (!isKafkaError(e)) throw e;
      await transaction.failed(e);
      return false;
    }
  }
}
