import { describeKafkaError } from './kafka-errors.ts';
import { parsePartitionKey } from '../base/partition-progress.ts';
import type { RecordDeleter } from '../base/client-supplier.ts';
import type { WorkerServices } from '../base/worker-services.ts';

/**
 * Kafka Streams' repartition purge: repartition topics are never trimmed by time (a backfill's old
 * timestamps would have the broker delete records nobody has read), so the worker deletes what its
 * group has read itself. After a commit, at most every `repartitionPurgeIntervalMs`, each owned
 * repartition partition is cut below the offset just committed: every record there went through its
 * task in a committed transaction, and a committed offset of the group never goes back, so no later
 * owner of the partition reads below it either.
 *
 * The deletion runs beside the loop (one at a time) and never fails the worker: a failure is a
 * `repartition-purge-failed` warning, and the next purge covers the same records.
 */
export class RepartitionPurge {
  /** As Kafka Streams: the first purge comes an interval after the start, not at the first commit. */
  #lastAt: number;
  /** Per partition key, the offset below which this worker has deleted. */
  readonly #purgedBelow = new Map<string, number>();
  #inFlight: Promise<void> | undefined;
  #deleter: RecordDeleter | undefined;

  constructor(
    private readonly services: Pick<WorkerServices, 'config' | 'clients' | 'emit'>,
    private readonly repartitionTopics: ReadonlySet<string>,
    private readonly owns: (partitionKey: string) => boolean,
    private readonly now: () => number = Date.now,
  ) {
    this.#lastAt = now();
  }

  /** A transaction committed; `committed` is the group's committed offset of each partition the worker knows. */
  afterCommit(committed: ReadonlyMap<string, number | undefined>): void {
    if (this.repartitionTopics.size === 0 || this.#inFlight !== undefined) return;
    if (this.now() - this.#lastAt < this.services.config.repartitionPurgeIntervalMs) return;
    const due: { topic: string; partition: number; offset: number; key: string }[] = [];
    for (const [key, offset] of committed) {
      if (offset === undefined || offset <= (this.#purgedBelow.get(key) ?? 0) || !this.owns(key)) continue;
      const { topic, partition } = parsePartitionKey(key);
      if (this.repartitionTopics.has(topic)) due.push({ topic, partition, offset, key });
    }
    if (due.length === 0) return;
    const { bootstrap, kafka } = this.services.config;
    this.#deleter ??= this.services.clients.recordDeleter?.(bootstrap, kafka);
    if (this.#deleter === undefined) return;
    this.#lastAt = this.now();
    this.#inFlight = this.#deleter
      .deleteBelow(due.map(({ topic, partition, offset }) => ({ topic, partition, offset })))
      .then(() => {
        for (const d of due) this.#purgedBelow.set(d.key, d.offset);
        this.services.emit({ type: 'repartition-purged', partitions: due.length });
      })
      .catch((e: unknown) => this.services.emit({ type: 'repartition-purge-failed', reason: describeKafkaError(e) }))
      .finally(() => {
        this.#inFlight = undefined;
      });
  }

  /** Waits for a purge in flight and lets go of the deleter's client. */
  async close(): Promise<void> {
    await this.#inFlight;
    await this.#deleter?.close();
    this.#deleter = undefined;
  }
}
