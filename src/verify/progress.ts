import { setTimeout as sleep } from 'node:timers/promises';
import { randomUUID } from 'node:crypto';
import type { IsolationLevel } from '@confluentinc/kafka-javascript/types/rdkafka.js';
import { withAdmin, type AdminClient } from '../kafka/admin.ts';
import { connectConsumer, consumeBatch, disconnect } from '../kafka/clients.ts';
import { GroupOffsets } from '../kafka/group-offsets.ts';

export interface CaughtUpOptions {
  readonly bootstrap: string;
  readonly groupId: string;
  /** Topics written without transactions: caught up means committed offset = high watermark. */
  readonly plainTopics: readonly string[];
  /** Topics written in transactions (repartition): their end holds markers and aborted records, so only stability counts. */
  readonly transactionalTopics?: readonly string[];
  readonly stableMs?: number;
  readonly timeoutMs?: number;
  readonly clientOptions?: Readonly<Record<string, string | number | boolean>>;
}

/**
 * Waits until a consumer group has committed everything of its plain input topics and its committed
 * offsets have not moved for `stableMs`: then every record it will ever process has been processed.
 */
export async function waitCaughtUp(opts: CaughtUpOptions): Promise<void> {
  const stableMs = opts.stableMs ?? 3_000;
  const deadline = Date.now() + (opts.timeoutMs ?? 120_000);
  let last = '';
  let stableSince = Date.now();
  const group = new GroupOffsets(opts.bootstrap, opts.groupId, opts.clientOptions);
  try {
    await withAdmin(
      opts.bootstrap,
      async (admin) => {
        const topics = [...opts.plainTopics, ...(opts.transactionalTopics ?? [])];
        // Looked up until each topic exists: the workers create their repartition topics only once started.
        const partitionsOf = new Map<string, { topic: string; partition: number }[]>();
        for (;;) {
          for (const topic of topics) {
            if (partitionsOf.has(topic)) continue;
            const ps = await admin.fetchTopicOffsets(topic).catch(() => undefined);
            if (ps) partitionsOf.set(topic, ps.map((p) => ({ topic, partition: p.partition })));
          }
          if (partitionsOf.size < topics.length) {
            if (Date.now() > deadline) throw new Error(`group ${opts.groupId} did not catch up in time: topics ${topics.filter((t) => !partitionsOf.has(t)).join(', ')} do not exist`);
            await sleep(250);
            continue;
          }
          let lagSummary = '';
          try {
            const committed = await group.fetch([...partitionsOf.values()].flat()).catch(() => []);
            const at = new Map<string, number>();
            for (const o of committed) at.set(`${o.topic}/${o.partition}`, o.offset);
            let inputDone = true;
            for (const topic of opts.plainTopics) {
              for (const p of await admin.fetchTopicOffsets(topic)) {
                const c = at.get(`${topic}/${p.partition}`) ?? -1;
                const high = Number(p.high);
                if (high > 0 && c < high) {
                  inputDone = false;
                  lagSummary += ` ${topic}/${p.partition}:${high - Math.max(c, 0)}`;
                }
              }
            }
            const snapshot = JSON.stringify([...at.entries()].sort());
            if (snapshot !== last) {
              last = snapshot;
              stableSince = Date.now();
            }
            if (inputDone && Date.now() - stableSince >= stableMs) {
              const left = await transactionalLeft(admin, opts.bootstrap, opts.transactionalTopics ?? [], at, opts.clientOptions ?? {});
              if (left === '') return;
              lagSummary = left;
              // Something is left downstream: start the stability clock again.
              stableSince = Date.now();
            }
          } catch (e) {
            // A node restarted or a coordinator moving answers a request or two with an error: the wait goes on.
            lagSummary = ` (last answer: ${(e as Error).message})`;
          }
          if (Date.now() > deadline) throw new Error(`group ${opts.groupId} did not catch up in time; lag:${lagSummary || ' (input done, offsets still moving)'}`);
          await sleep(250);
        }
      },
      opts.clientOptions ?? {},
    );
  } finally {
    await group.close();
  }
}

const READ_COMMITTED = 1 as IsolationLevel;

/**
 * Describes what a group still has to read of transactional topics ('' = nothing). The committed
 * offset can sit below the end for good (commit and abort markers, aborted records), so "nothing left"
 * means: no open transaction (last stable offset = high watermark), and no committed data record
 * between the committed offset and the end.
 */
async function transactionalLeft(admin: AdminClient, bootstrap: string, topics: readonly string[], committed: ReadonlyMap<string, number>, clientOptions: Readonly<Record<string, string | number | boolean>>): Promise<string> {
  const toRead: { topic: string; partition: number; offset: number; end: number }[] = [];
  for (const topic of topics) {
    const ends = await admin.fetchTopicOffsets(topic);
    const stable = await admin.fetchTopicOffsets(topic, { isolationLevel: READ_COMMITTED });
    for (const p of ends) {
      const high = Number(p.high);
      const lso = Number(stable.find((s) => s.partition === p.partition)?.offset ?? high);
      if (lso < high) return ` ${topic}/${p.partition}: open transaction`;
      const c = committed.get(`${topic}/${p.partition}`) ?? -1;
      if (high > 0 && c < high) toRead.push({ topic, partition: p.partition, offset: Math.max(c, 0), end: high });
    }
  }
  if (toRead.length === 0) return '';
  const consumer = await connectConsumer({
    'bootstrap.servers': bootstrap,
    'group.id': `onceflow-progress-${randomUUID()}`,
    'enable.auto.commit': false,
    'enable.partition.eof': true,
    'isolation.level': 'read_committed',
    ...clientOptions,
  });
  try {
    const pending = new Set(toRead.map((t) => `${t.topic}/${t.partition}`));
    consumer.on('partition.eof', (e) => pending.delete(`${e.topic}/${e.partition}`));
    consumer.assign(toRead.map(({ topic, partition, offset }) => ({ topic, partition, offset })));
    const deadline = Date.now() + 10_000;
    while (pending.size > 0 && Date.now() < deadline) {
      const batch = await consumeBatch(consumer, 1000);
      const first = batch[0];
      if (first) return ` ${first.topic}/${first.partition}: ${batch.length}+ records not yet processed`;
    }
    return pending.size > 0 ? ` ${[...pending].join(', ')}: end not reached` : '';
  } finally {
    await disconnect(consumer);
  }
}
