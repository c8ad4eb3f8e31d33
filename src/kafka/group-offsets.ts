import type { KafkaConsumer } from '@confluentinc/kafka-javascript';
import { committedOffsets, connectConsumer, disconnect } from './clients.ts';

export interface GroupPartitionOffset {
  readonly topic: string;
  readonly partition: number;
  /** Next offset the group reads; -1 when it has committed nothing there. */
  readonly offset: number;
  readonly metadata: string | undefined;
}

/**
 * Reads a group's committed offsets through a consumer that never joins the group (OffsetFetch only).
 * Not the admin client's fetchOffsets: when the group's coordinator answers NOT_COORDINATOR (a group
 * not seen before, a coordinator still loading) librdkafka 2.x dereferences a null consumer group in
 * the admin client and the process dies with SIGSEGV (confluentinc/librdkafka#5040,
 * confluent-kafka-javascript#374). A consumer has a group handle and just asks again.
 * The same consumer sets a group's offsets (commit) for `onceflow reset`.
 */
export class GroupOffsets {
  #consumer: KafkaConsumer | undefined;

  constructor(
    private readonly bootstrap: string,
    private readonly groupId: string,
    private readonly clientOptions: Readonly<Record<string, string | number | boolean>> = {},
  ) {}

  async #connected(): Promise<KafkaConsumer> {
    this.#consumer ??= await connectConsumer({ 'bootstrap.servers': this.bootstrap, ...this.clientOptions, 'group.id': this.groupId, 'enable.auto.commit': false, 'isolation.level': 'read_uncommitted' });
    return this.#consumer;
  }

  async fetch(partitions: readonly { topic: string; partition: number }[], timeoutMs = 5_000): Promise<GroupPartitionOffset[]> {
    if (partitions.length === 0) return [];
    // read_uncommitted: with read_committed librdkafka asks for stable offsets and waits out open
    // transactions; offsets of an open transaction are not visible either way.
    const got = await committedOffsets(await this.#connected(), partitions.map(({ topic, partition }) => ({ topic, partition })), timeoutMs);
    return got.map((o) => ({ topic: o.topic, partition: o.partition, offset: o.offset !== undefined && o.offset >= 0 ? o.offset : -1, metadata: o.metadata ?? undefined }));
  }

  /**
   * Sets the group's committed offsets from outside the group (OffsetCommit with no generation): the
   * broker takes that only while the group has no members, and refuses it (an error here) otherwise.
   */
  async commit(offsets: readonly { topic: string; partition: number; offset: number }[]): Promise<void> {
    if (offsets.length === 0) return;
    const consumer = await this.#connected();
    consumer.commitSync(offsets.map(({ topic, partition, offset }) => ({ topic, partition, offset })));
  }

  async close(): Promise<void> {
    const c = this.#consumer;
    this.#consumer = undefined;
    if (c) await disconnect(c);
  }
}
