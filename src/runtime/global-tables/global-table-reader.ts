import type { KafkaConsumer } from '@confluentinc/kafka-javascript';
import type { CompiledGlobalTable } from '../../graph/types.ts';
import { consumeBatch, disconnect, OFFSET_BEGINNING, READ_TO_END_CONFIG, type RdConfig } from '../../kafka/clients.ts';
import { globalTableRows, type GlobalTableRows } from './global-tables.ts';

/**
 * Follows the global tables' topics for one worker: `load` reads every partition whole before the
 * worker processes anything, `poll` applies what arrived since, between batches. Outside the
 * transaction on purpose: the tables are read-only to the tasks, so there is nothing to commit, and
 * no offsets are kept (a restart reads them whole again).
 */
export class GlobalTableReader {
  readonly rows: ReadonlyMap<string, GlobalTableRows>;
  /** The same rows by source topic, for applying what the consumer hands over. */
  readonly #rowsByTopic: ReadonlyMap<string, GlobalTableRows>;
  #consumer: KafkaConsumer | undefined;

  constructor(
    private readonly tables: readonly CompiledGlobalTable[],
    private readonly connect: (config: RdConfig) => Promise<KafkaConsumer>,
  ) {
    this.rows = globalTableRows(tables);
    this.#rowsByTopic = new Map(tables.map((t) => [t.topic, this.rows.get(t.store)!]));
  }

  /** The rows of a global table by store name, for the tasks' global-table joins. */
  readonly rowsOf = (store: string): GlobalTableRows | undefined => this.rows.get(store);

  /** Reads every partition of every global table to its end; returns the number of records applied. */
  async load(clientConfig: RdConfig, partitionsByTopic: ReadonlyMap<string, number>): Promise<number> {
    if (this.tables.length === 0) return 0;
    const consumer = (this.#consumer = await this.connect({ ...clientConfig, ...READ_TO_END_CONFIG }));
    const pending = new Set<string>();
    const assignment = this.tables.flatMap((t) =>
      Array.from({ length: partitionsByTopic.get(t.topic) ?? 1 }, (_, partition) => {
        pending.add(`${t.topic}\u0000${partition}`);
        return { topic: t.topic, partition, offset: OFFSET_BEGINNING };
      }),
    );
    const onEof = (eof: { topic: string; partition: number }): void => void pending.delete(`${eof.topic}\u0000${eof.partition}`);
    consumer.on('partition.eof', onEof);
    consumer.assign(assignment);
    let applied = 0;
    while (pending.size > 0) applied += this.#apply(await consumeBatch(consumer, 10_000));
    consumer.removeListener('partition.eof', onEof);
    consumer.setDefaultConsumeTimeout(0);
    return applied;
  }

  /** Applies the updates that arrived since the last call; never waits for one. */
  async poll(): Promise<number> {
    return this.#consumer === undefined ? 0 : this.#apply(await consumeBatch(this.#consumer, 10_000));
  }

  #apply(batch: readonly { topic: string; key?: Buffer | string | null; value: Buffer | null }[]): number {
    let applied = 0;
    for (const m of batch) {
      const rows = this.#rowsByTopic.get(m.topic);
      if (!rows || m.key === null || m.key === undefined) continue;
      rows.apply(typeof m.key === 'string' ? Buffer.from(m.key) : m.key, m.value);
      applied++;
    }
    return applied;
  }

  async close(): Promise<void> {
    const consumer = this.#consumer;
    this.#consumer = undefined;
    if (consumer) await disconnect(consumer);
  }
}
