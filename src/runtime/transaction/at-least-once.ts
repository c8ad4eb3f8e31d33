import type { Producer } from '@confluentinc/kafka-javascript';
import { flush, type RdConfig } from '../../kafka/clients.ts';
import { describeKafkaError } from './kafka-errors.ts';
import { TransactionalOutput, type CommitOutcome, type CommitRequest } from './output.ts';

/**
 * At least once: the "transaction" is the batch since the last offset commit. Its commit flushes the
 * outputs, checks every delivery report, and only then commits the offsets; a crash in between
 * replays the batch. Nothing is aborted at a coordinator: a failure only rolls the tasks back.
 */
export class AtLeastOnceOutput extends TransactionalOutput {
  /** The first failed delivery since the last commit; it fails that commit. Kept across a replaced client. */
  private deliveryError: unknown;

  protected override producerConfig(): RdConfig {
    return { ...super.producerConfig(), 'dr_cb': true };
  }

  protected async createClient(): Promise<Producer> {
    const producer = await this.options.clients.producer(this.producerConfig());
    producer.on('delivery-report', (err) => {
      if (err) this.deliveryError ??= err;
    });
    return producer;
  }

  protected async beginOnClient(): Promise<void> {}

  protected async commitOnClient(client: Producer, { offsets, consumer, prepare }: CommitRequest): Promise<CommitOutcome> {
    try {
      await prepare();
      this.step('commit: flush');
      await flush(client, 30_000);
      if (this.deliveryError) throw this.deliveryError;
      // The outputs are acknowledged, the offsets not yet committed: a crash here replays them.
      this.options.faults('after-produce', this.phasePass);
      if (offsets.length > 0) consumer.commitSync(offsets);
    } catch (e) {
      this.deliveryError = undefined;
      this.machine.to('ABORTING', 'commit');
      this.machine.to('READY', 'commit');
      return { committed: false, failure: { kind: 'rolled-back', error: e, reason: `at-least-once commit failed: ${describeKafkaError(e)}` } };
    }
    this.machine.to('READY', 'commit');
    return { committed: true, announced: false };
  }

  protected async abortOnClient(): Promise<void> {}
}
