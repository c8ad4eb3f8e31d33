import type { RecordHeader } from '../core/records.ts';
import { partitionFor } from './partitioner.ts';

/** A committed record as it sits in a topic of the driver's in-memory log. */
export interface LoggedRecord {
  readonly topic: string;
  readonly partition: number;
  readonly offset: number;
  readonly key: Buffer | null;
  readonly value: Buffer | null;
  readonly timestamp: number;
  readonly headers: readonly RecordHeader[];
}

/**
 * Every topic of the driver as an in-memory log: committed records with the offsets Kafka would give
 * them, placed on partitions as Kafka's default partitioner would, and how far the test has read each.
 */
export class TopicLog {
  readonly #partitions: number;
  readonly #logs = new Map<string, LoggedRecord[]>();
  readonly #offsets = new Map<string, number>();
  readonly #readPos = new Map<string, number>();
  #roundRobin = 0;

  constructor(partitions: number) {
    this.#partitions = partitions;
  }

  partitionOf(key: Buffer | null): number {
    if (this.#partitions === 1) return 0;
    if (key === null) return this.#roundRobin++ % this.#partitions;
    return partitionFor(key, this.#partitions);
  }

  append(topic: string, partition: number, r: { key: Buffer | null; value: Buffer | null; timestamp: number; headers?: readonly RecordHeader[] }): LoggedRecord {
    const pk = `${topic}\u0000${partition}`;
    const offset = this.#offsets.get(pk) ?? 0;
    this.#offsets.set(pk, offset + 1);
    const rec: LoggedRecord = { topic, partition, offset, key: r.key, value: r.value, timestamp: r.timestamp, headers: r.headers ?? [] };
    (this.#logs.get(topic) ?? this.#logs.set(topic, []).get(topic)!).push(rec);
    return rec;
  }

  records(topic: string): readonly LoggedRecord[] {
    return this.#logs.get(topic) ?? [];
  }

  /** The records of `topic` the test has not read yet; from now on they count as read. */
  readUnread(topic: string): readonly LoggedRecord[] {
    const log = this.#logs.get(topic) ?? [];
    const from = this.#readPos.get(topic) ?? 0;
    this.#readPos.set(topic, log.length);
    return log.slice(from);
  }

  allRead(topic: string): boolean {
    return (this.#logs.get(topic)?.length ?? 0) <= (this.#readPos.get(topic) ?? 0);
  }
}

export function headersToObject(hs: readonly RecordHeader[]): Record<string, string> {
  const o: Record<string, string> = {};
  for (const h of hs) o[h.key] = h.value.toString('utf8');
  return o;
}
