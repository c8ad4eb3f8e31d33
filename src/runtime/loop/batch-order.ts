import type { Message } from '@confluentinc/kafka-javascript';
import { partitionKey } from '../base/partition-progress.ts';

/** The records one fetched batch holds of one partition, in offset order; `next` is the first not yet taken. */
export interface PartitionRun {
  readonly key: string;
  readonly topic: string;
  readonly partition: number;
  readonly messages: Message[];
  next: number;
}

/** A stretch of one run to process now: `messages[from, to)`. */
export interface BatchSlice {
  readonly run: PartitionRun;
  readonly from: number;
  readonly to: number;
}

const timestampOf = (m: Message): number => m.timestamp ?? 0;

/**
 * A fetched batch in event-time order across its partitions. librdkafka hands a batch over partition
 * by partition, so processing it as given sends one partition's whole time range downstream, then the
 * next one's from its start again: a windowed aggregate after a repartition then sees most of the
 * second partition's records behind its grace period and drops them as late. Kafka Streams picks the
 * partition whose next record is the oldest; this does the same over the batch, a merge of the
 * per-partition runs in which each partition keeps its own order (records of one partition are never
 * reordered, whatever their timestamps). Slices are as long as the merge allows, so a batch whose
 * partitions cover separate time ranges still goes through in a few long slices.
 */
export class TimeOrderedBatch {
  readonly runs: PartitionRun[] = [];

  constructor(batch: readonly Message[]) {
    const byKey = new Map<string, PartitionRun>();
    let run: PartitionRun | undefined;
    for (const m of batch) {
      if (run === undefined || run.partition !== m.partition || run.topic !== m.topic) {
        const key = partitionKey(m.topic, m.partition);
        run = byKey.get(key);
        if (run === undefined) {
          run = { key, topic: m.topic, partition: m.partition, messages: [], next: 0 };
          byKey.set(key, run);
          this.runs.push(run);
        }
      }
      run.messages.push(m);
    }
  }

  /** The next slice in time order, taken; undefined once every record has been. */
  next(): BatchSlice | undefined {
    const runs = this.runs;
    let oldest: PartitionRun | undefined;
    let oldestTs = Number.POSITIVE_INFINITY;
    let secondTs = Number.POSITIVE_INFINITY;
    for (let i = 0; i < runs.length; i++) {
      const run = runs[i]!;
      if (run.next >= run.messages.length) continue;
      const ts = timestampOf(run.messages[run.next]!);
      // Ties go to the run met first, that is, to fetch order.
      if (oldest === undefined || ts < oldestTs) {
        if (oldest !== undefined) secondTs = oldestTs;
        oldest = run;
        oldestTs = ts;
      } else if (ts < secondTs) secondTs = ts;
    }
    if (oldest === undefined) return undefined;
    const from = oldest.next;
    const messages = oldest.messages;
    let to = from + 1;
    while (to < messages.length && timestampOf(messages[to]!) <= secondTs) to++;
    oldest.next = to;
    return { run: oldest, from, to };
  }
}
