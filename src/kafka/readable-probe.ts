import type { KafkaConsumer } from '@confluentinc/kafka-javascript';
import type { ClientOptions } from './admin.ts';
import { connectConsumer, consumeBatch, disconnect } from './clients.ts';
import { readerConfig } from './read-topic.ts';

/** A stretch of a partition to look into: from the next offset to read up to the end. */
export interface ProbeRange {
  readonly topic: string;
  readonly partition: number;
  readonly from: number;
  readonly end: number;
}

/** What a look found: the first readable offset, `null` for none before the end, `undefined` for no answer in time. */
export type FirstReadable = number | null | undefined;

interface Looked {
  readonly from: number;
  readonly end: number;
  readonly first: number | null;
}

/** How `firstReadable` keys its answers. */
export const probeKey = (topic: string, partition: number): string => `${topic}-${partition}`;

/**
 * Finds, for `recordsBehind`, whether a read_committed reader would get anything between a group's
 * committed offset and a partition's end, or only commit markers and aborted records. One consumer
 * outside any group, opened on first use and kept; a range looked at before is answered from memory,
 * so a caught-up application costs one look per partition, not one per refresh.
 */
export class ReadableProbe {
  #consumer: KafkaConsumer | undefined;
  readonly #looked = new Map<string, Looked>();
  readonly #eofs = new Set<string>();

  constructor(
    private readonly bootstrap: string,
    private readonly clientOptions: ClientOptions = {},
    private readonly timeoutMs = 5_000,
  ) {}

  /** Keyed `topic-partition`; ranges with nothing between `from` and `end` are left out (nothing to skip). */
  async firstReadable(ranges: readonly ProbeRange[]): Promise<Map<string, FirstReadable>> {
    const out = new Map<string, FirstReadable>();
    const toLook: ProbeRange[] = [];
    for (const r of ranges) {
      if (r.end <= r.from) continue;
      const before = this.#looked.get(probeKey(r.topic, r.partition));
      if (before && before.from === r.from && before.end === r.end) out.set(probeKey(r.topic, r.partition), before.first);
      else toLook.push(r);
    }
    if (toLook.length === 0) return out;
    const consumer = await this.#open();
    const pending = new Map(toLook.map((r) => [probeKey(r.topic, r.partition), r]));
    this.#eofs.clear();
    consumer.assign(toLook.map((r) => ({ topic: r.topic, partition: r.partition, offset: r.from })));
    try {
      const deadline = Date.now() + this.timeoutMs;
      while (pending.size > 0 && Date.now() < deadline) {
        for (const m of await consumeBatch(consumer, 500)) {
          const range = pending.get(probeKey(m.topic, m.partition));
          if (!range) continue;
          // A record written after the end was read is not lag the end could show.
          this.#settle(out, range, m.offset < range.end ? m.offset : null);
          pending.delete(probeKey(m.topic, m.partition));
        }
        for (const eof of this.#eofs) {
          const range = pending.get(eof);
          if (range) this.#settle(out, range, null);
          pending.delete(eof);
        }
      }
    } finally {
      consumer.unassign();
    }
    return out;
  }

  #settle(out: Map<string, FirstReadable>, range: ProbeRange, first: number | null): void {
    out.set(probeKey(range.topic, range.partition), first);
    this.#looked.set(probeKey(range.topic, range.partition), { from: range.from, end: range.end, first });
  }

  async #open(): Promise<KafkaConsumer> {
    if (this.#consumer) return this.#consumer;
    const consumer = await connectConsumer({ ...readerConfig(this.bootstrap, 'read_committed', this.clientOptions), 'fetch.wait.max.ms': 20 });
    consumer.on('partition.eof', (eof) => this.#eofs.add(probeKey(eof.topic, eof.partition)));
    this.#consumer = consumer;
    return consumer;
  }

  async close(): Promise<void> {
    if (this.#consumer) await disconnect(this.#consumer);
    this.#consumer = undefined;
  }
}
