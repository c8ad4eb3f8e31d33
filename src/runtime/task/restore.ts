import { randomUUID } from 'node:crypto';
import type { KafkaConsumer } from '@confluentinc/kafka-javascript';
import { connectConsumer, consumeBatch, disconnect, READ_TO_END_CONFIG, watermarks, type RdConfig } from '../../kafka/clients.ts';
import type { RuntimeTask } from './worker-topology.ts';

/**
 * Where a store's restore starts, given its changelog partition's offsets now: `low` for a full
 * replay, or a checkpoint of a persistent store (which must then hold exactly the changelog up to it).
 */
export type RestoreStart = (task: RuntimeTask, store: string, changelog: { topic: string; partition: number; low: number; high: number }) => number;

/** Told what a restore reads and how far it got, for interactive queries to answer with while it runs. */
export interface RestoreObserver {
  /** The store's changelog partition will be read from offset `from` up to `to` (exclusive). */
  planned(task: RuntimeTask, store: string, changelog: { readonly topic: string; readonly partition: number; readonly from: number; readonly to: number }): void;
  /** The changelog record at `offset` was applied. */
  applied(task: RuntimeTask, store: string, offset: number): void;
  /** A record of a table's source topic was not applied: its serdes do not decode it (table-source-restore.ts). */
  skipped?(task: RuntimeTask, store: string, record: { readonly topic: string; readonly partition: number; readonly offset: number; readonly code: string; readonly message: string }): void;
}

const fromTheStart: RestoreStart = (_task, _store, c) => c.low;

/** Where a restore stops short of the end (exclusive), if it does: a table's source topic stops at the group's committed offset. */
export type RestoreEnd = (task: RuntimeTask, changelog: { readonly topic: string; readonly partition: number; readonly sourceTopic?: boolean }) => number | undefined;

/**
 * Rebuilds the tasks' stores from their changelog partitions before they process a record.
 * Reads read_committed from the start (or `start`) to the end; the end is recognised by partition EOF,
 * because a changelog whose last offset is a commit marker has a high watermark no data record reaches.
 * Returns the number of changelog records applied.
 */
export async function restoreTasks(
  clientConfig: RdConfig,
  tasks: readonly RuntimeTask[],
  start: RestoreStart = fromTheStart,
  connect: (config: RdConfig) => Promise<KafkaConsumer> = connectConsumer,
  endOf: RestoreEnd = () => undefined,
  observer?: RestoreObserver,
  /**
   * A connected consumer to ask the changelogs' offsets with (the worker's own): a task whose stores are
   * already at their changelogs' ends (a checkpoint, a warm standby copy) then costs no restore consumer.
   */
  offsetsFrom?: KafkaConsumer,
): Promise<number> {
  const targets = new Map<string, { task: RuntimeTask; store: string; end: number }>();
  for (const task of tasks) for (const c of task.changelogs) targets.set(`${c.topic}\u0000${c.partition}`, { task, store: c.store, end: endOf(task, c) ?? Number.POSITIVE_INFINITY });
  if (targets.size === 0) return 0;
  const connectRestoreConsumer = (): Promise<KafkaConsumer> =>
    connect({
      // The caller may name the group (the worker: its own, which its group grant covers): librdkafka looks up the
      // coordinator of any group.id, though this consumer only assigns and never joins or commits.
      'group.id': `onceflow-restore-${randomUUID()}`,
      ...clientConfig,
      ...READ_TO_END_CONFIG,
    });
  let consumer = offsetsFrom === undefined ? await connectRestoreConsumer() : undefined;
  let restored = 0;
  try {
    const pending = new Set<string>();
    const assignment: { topic: string; partition: number; offset: number }[] = [];
    for (const [key, { task, store }] of targets) {
      const [topic, p] = key.split('\u0000') as [string, string];
      const partition = Number(p);
      const { low, high } = await watermarks(offsetsFrom ?? consumer!, topic, partition, 30_000);
      const offset = start(task, store, { topic, partition, low, high });
      observer?.planned(task, store, { topic, partition, from: offset, to: Math.max(offset, Math.min(high, targets.get(key)!.end)) });
      if (Math.min(high, targets.get(key)!.end) > offset) {
        pending.add(key);
        assignment.push({ topic, partition, offset });
      }
    }
    if (assignment.length === 0) return 0;
    consumer ??= await connectRestoreConsumer();
    consumer.on('partition.eof', (eof) => pending.delete(`${eof.topic}\u0000${eof.partition}`));
    consumer.assign(assignment);
    while (pending.size > 0) {
      const batch = await consumeBatch(consumer, 10_000);
      for (const m of batch) {
        const key = `${m.topic}\u0000${m.partition}`;
        const target = targets.get(key);
        if (!target || m.offset >= target.end) {
          pending.delete(key);
          continue;
        }
        if (m.offset >= target.end - 1) pending.delete(key);
        observer?.applied(target.task, target.store, m.offset);
        if (m.key === null || m.key === undefined) continue;
        const recordKey = typeof m.key === 'string' ? Buffer.from(m.key) : m.key;
        const check = target.task.checkRestored?.(target.store, recordKey, m.value);
        const rejected = check instanceof Promise ? await check : check;
        if (rejected !== undefined) {
          observer?.skipped?.(target.task, target.store, { topic: m.topic, partition: m.partition, offset: m.offset, ...rejected });
          continue;
        }
        target.task.restore(target.store, recordKey, m.value);
        restored++;
      }
    }
    for (const task of tasks) task.commit();
  } finally {
    if (consumer) await disconnect(consumer);
  }
  return restored;
}
