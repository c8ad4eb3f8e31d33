import type { OutgoingRecord, RecordCollector, RecordOrigin } from '../../core/records.ts';
import type { PartitionRun } from './batch-order.ts';

/**
 * What the loop did with the next batch while the last transaction was committing. A commit waits
 * on the broker for tens of milliseconds (offsets to the group coordinator, EndTxn), and the
 * producer cannot begin the next transaction until it ends, so the loop would sit idle. Meanwhile it
 * runs the batch's records through the tasks that hold nothing a rollback must undo (no store, no
 * record cache, no punctuation: `RuntimeTask.stateless`), keeping their outputs here instead of
 * producing them. Once the commit has succeeded and nothing moved (no rewind, no rebalance) the
 * outputs are sent, in order, into the new transaction with those records' offsets: exactly what
 * processing them after the commit would have sent. Otherwise all of it is dropped and the batch is
 * processed, or read again, as if this had never run: nothing of it reached Kafka.
 */
export class Speculation implements RecordCollector {
  readonly outputs: OutgoingRecord[] = [];
  readonly origins: RecordOrigin[] = [];
  /** Partitions whose records of the batch were all processed here (by partition key): the loop skips them. */
  readonly partitions = new Set<string>();
  readonly processed: { readonly run: PartitionRun; readonly lastOffset: number; readonly records: number }[] = [];
  private record: OutgoingRecord['source'];
  private origin: RecordOrigin | undefined;

  constructor(
    /** The partition epoch the batch was fetched under (partition-progress.ts). */
    readonly epoch: number,
    /** Rebalances the worker had handled when the batch was fetched. */
    readonly rebalances: number,
  ) {}

  /** The collector for one record's outputs: this, aimed at the record (one object for every record, as the worker's own collector is). */
  aim(record: NonNullable<OutgoingRecord['source']>): RecordCollector {
    this.record = record;
    this.origin = undefined;
    return this;
  }

  send(output: OutgoingRecord, origin?: RecordOrigin): void {
    this.outputs.push(output);
    // The runtime's tasks always pass an origin; one is made only for a task that does not.
    this.origins.push(origin ?? (this.origin ??= { record: this.record!, released: false, seq: 0, lineagePrefix: undefined }));
  }
}
