import type { TopicPartitionOffset } from '@confluentinc/kafka-javascript';

import { OFFSET_BEGINNING } from '../../kafka/clients.ts';

export interface PartitionRef {
  readonly topic: string;
  readonly partition: number;
}

export const partitionKey = (topic: string, partition: number): string => `${topic}\u0000${partition}`;

export function parsePartitionKey(key: string): PartitionRef {
  const separator = key.lastIndexOf('\u0000');
  return { topic: key.slice(0, separator), partition: Number(key.slice(separator + 1)) };
}

/**
 * Where each owned source partition stands, and the rules that keep a failed transaction from losing
 * records. The consumer's fetch position runs ahead of what is committed: every record a batch
 * delivered moved it, processed or not. After an abort, a fencing or a replaced producer the position
 * is therefore wrong for every owned partition, and if the loop read on from it the next commit would
 * carry offsets past records that no committed transaction contains (found with two live processes
 * sharing one transactional id, which fence each other mid-batch). So:
 *
 * 1. A rewind marks every owned partition unsettled, not only the ones the transaction touched: a
 *    batch cut short by the failure delivered records of partitions it never reached.
 * 2. An unsettled partition is sought to its committed offset (the start of the log if none). A seek
 *    that fails leaves it unsettled; the loop tries again before each fetch.
 * 3. No record of an unsettled partition is processed, so no offset of it can enter a transaction
 *    until its position is provably the committed one. (Skipping a record moves the position again;
 *    the seek that settles the partition puts it back.)
 * 4. A partition assigned to this worker is assigned at the committed offset it read, explicitly,
 *    which settles it: nothing the consumer fetched before can be mistaken for its position.
 * 5. Whether a transaction whose outcome is unknown (a fenced or failed commit) landed is read back
 *    from the group's committed offsets (read_committed consumers ask for stable offsets), and the
 *    partitions are settled to what was read.
 */
export class PartitionProgress {
  /** next offset to read, by partition, for records processed in the open transaction */
  readonly pending = new Map<string, TopicPartitionOffset>();
  /** last committed next-offset by partition; undefined = nothing committed yet (read from the start) */
  readonly committed = new Map<string, number | undefined>();
  /** owned partitions whose fetch position is not known to be their committed offset */
  readonly unsettled = new Set<string>();
  /**
   * Moves on with every change of ownership or position (a rewind, an assignment, a revocation): a
   * batch fetched under an older epoch may hold records from before it, which must not be processed.
   */
  epoch = 0;
  /**
   * Per partition, moves on whenever its fetch position is put somewhere else (a rewind, an
   * assignment, a revocation): records fetched before and still held back (input-synchronizer.ts)
   * lie behind the new position, and are read again from it.
   */
  private readonly repositioned = new Map<string, number>();

  /** Rule 1: after any failure every owned partition must be put back. */
  unsettle(owned: Iterable<string>): void {
    this.epoch++;
    this.pending.clear();
    for (const key of owned) {
      this.unsettled.add(key);
      this.moved(key);
    }
  }

  /** How often the partition's position has been put elsewhere: equal counts mean the records fetched in between are still ahead of it. */
  positionMoves(key: string): number {
    return this.repositioned.get(key) ?? 0;
  }

  private moved(key: string): void {
    this.repositioned.set(key, this.positionMoves(key) + 1);
  }

  /** Rule 3. */
  mayProcess(key: string): boolean {
    return !this.unsettled.has(key);
  }

  /** Rule 2: where an unsettled partition must be sought. */
  rewindTarget(key: string): TopicPartitionOffset {
    return { ...parsePartitionKey(key), offset: this.committed.get(key) ?? OFFSET_BEGINNING };
  }

  /** Rule 4: the offset to assign a partition at, from the committed offset just read. */
  assignAt(ref: PartitionRef): TopicPartitionOffset {
    this.epoch++;
    const key = partitionKey(ref.topic, ref.partition);
    this.unsettled.delete(key);
    this.moved(key);
    return { topic: ref.topic, partition: ref.partition, offset: this.committed.get(key) ?? OFFSET_BEGINNING };
  }

  settled(key: string): void {
    this.epoch++;
    this.unsettled.delete(key);
  }

  /** A partition this worker no longer owns: its next owner starts from the committed offset. */
  forget(key: string): void {
    this.epoch++;
    this.moved(key);
    this.committed.delete(key);
    this.pending.delete(key);
    this.unsettled.delete(key);
  }

  /** The open transaction committed: its offsets are the new committed ones. */
  markCommitted(): void {
    for (const [key, offset] of this.pending) this.committed.set(key, offset.offset);
    this.pending.clear();
  }
}
