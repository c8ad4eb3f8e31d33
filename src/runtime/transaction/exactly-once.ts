import type { Producer } from '@confluentinc/kafka-javascript';
import { setTimeout as sleep } from 'node:timers/promises';
import { abortTransaction, beginTransaction, commitTransaction, disconnect, initTransactions, sendOffsetsToTransaction, type RdConfig } from '../../kafka/clients.ts';
import { TransactionCallStuckError, WorkerError } from '../base/errors.ts';
import { classifyTxnError, isTransactionalIdUnauthorized } from './kafka-errors.ts';
import { TransactionalOutput, type CommitOutcome, type CommitRequest } from './output.ts';

/** How long past its own timeout a transactional call may take before the producer is given up. */
const STUCK_CALL_MARGIN_MS = 5_000;

/**
 * Kafka Streams' exactly_once_v2: outputs and the consumed offsets commit in one transaction, the
 * offsets sent with the consumer's group metadata so that a stale generation is fenced.
 */
export class ExactlyOnceOutput extends TransactionalOutput {
  protected override producerConfig(): RdConfig {
    return { ...super.producerConfig(), 'dr_cb': false, 'transactional.id': this.options.transactionalId, 'transaction.timeout.ms': this.options.transactionTimeoutMs };
  }

  protected async createClient(): Promise<Producer> {
    const producer = await this.options.clients.producer(this.producerConfig());
    for (let attempt = 1; ; attempt++) {
      try {
        this.step(`producer: init transactions (attempt ${attempt})`);
        await initTransactions(producer, this.options.transactionTimeoutMs * 3);
        return producer;
      } catch (e) {
        if (isTransactionalIdUnauthorized(e)) {
          await disconnect(producer);
          throw new WorkerError('TRANSACTIONAL_ID_NOT_AUTHORIZED', `the principal may not use transactional id ${this.options.transactionalId}: grant WRITE on TransactionalId prefix ${this.options.appId}-`, { cause: e });
        }
        // CONCURRENT_TRANSACTIONS right after a restart: the coordinator is still aborting the crashed incarnation's transaction.
        if (classifyTxnError(e) === 'retriable' && attempt < 20) {
          this.options.onRetry?.('initTransactions', attempt, e);
          await sleep(Math.min(2000, 100 * attempt));
          continue;
        }
        await disconnect(producer);
        throw e;
      }
    }
  }

  protected beginOnClient(client: Producer): Promise<void> {
    return beginTransaction(client);
  }

  protected async commitOnClient(client: Producer, { offsets, consumer, prepare }: CommitRequest): Promise<CommitOutcome> {
    const { faults } = this.options;
    try {
      await prepare();
      faults('after-produce', this.phasePass);
      if (this.options.unsafeCommitOffsetsOutsideTransaction) {
        if (offsets.length > 0) consumer.commitSync(offsets);
      } else if (offsets.length > 0) {
        this.step('commit: send offsets');
        await this.sendOffsetsWithin(client, offsets, consumer);
      }
      faults('after-send-offsets', this.phasePass);
      await this.commitWithRetry(client);
    } catch (e) {
      return { committed: false, failure: this.failed(e) };
    }
    this.machine.to('READY', 'commit');
    return { committed: true, announced: true };
  }

  /**
   * librdkafka bounds send_offsets_to_transaction by its timeout, except when the group coordinator it
   * cached went away: then the call can wait for ever (confluentinc/librdkafka#5456, #5511), and the
   * worker with it, still a group member, until max.poll.interval.ms. Past the timeout and a margin the
   * producer is given up: the transaction's outcome is read back and the producer replaced, as after any
   * unknown outcome. It cannot be destroyed while a thread of its own waits inside it, so it is set aside
   * and disconnected once the call returns (the broker closing its idle connections wakes it).
   */
  private async sendOffsetsWithin(client: Producer, offsets: CommitRequest['offsets'], consumer: CommitRequest['consumer']): Promise<void> {
    const call = sendOffsetsToTransaction(client, offsets, consumer, this.options.transactionTimeoutMs);
    const waitMs = this.options.transactionTimeoutMs + STUCK_CALL_MARGIN_MS;
    let timer: NodeJS.Timeout | undefined;
    const stuck = new Promise<never>((_resolve, reject) => {
      timer = setTimeout(() => reject(new TransactionCallStuckError('sendOffsetsToTransaction', waitMs)), waitMs);
    });
    try {
      await Promise.race([call, stuck]);
    } catch (e) {
      if (e instanceof TransactionCallStuckError) this.setAsideUntil(client, call);
      throw e;
    } finally {
      clearTimeout(timer);
    }
  }

  /** A retriable commit failure is retried with the same producer: librdkafka resumes the same EndTxn. */
  private async commitWithRetry(client: Producer): Promise<void> {
    for (let attempt = 1; ; attempt++) {
      try {
        this.step(`commit: end transaction (attempt ${attempt})`);
        const committing = commitTransaction(client, this.options.transactionTimeoutMs);
        this.options.faults('during-commit', this.phasePass);
        await committing;
        return;
      } catch (e) {
        if (classifyTxnError(e) !== 'retriable' || attempt >= 5) throw e;
        this.options.onRetry?.('commitTransaction', attempt, e);
        await sleep(100 * attempt);
      }
    }
  }

  protected abortOnClient(client: Producer): Promise<void> {
    this.step('abort: abort transaction');
    return abortTransaction(client, this.options.transactionTimeoutMs);
  }
}
