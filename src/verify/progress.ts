import { setTimeout as sleep } from 'node:timers/promises';
import { withAdmin } from '../kafka/admin.ts';

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
  await withAdmin(
    opts.bootstrap,
    async (admin) => {
      for (;;) {
        const topics = [...opts.plainTopics, ...(opts.transactionalTopics ?? [])];
        const committed = await admin.fetchOffsets({ groupId: opts.groupId, topics: [...topics], requireStableOffsets: true }).catch(() => []);
        const at = new Map<string, number>();
        for (const t of committed) for (const p of t.partitions) at.set(`${t.topic}/${p.partition}`, Number(p.offset));
        let inputDone = true;
        let lagSummary = '';
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
        if (inputDone && Date.now() - stableSince >= stableMs) return;
        if (Date.now() > deadline) throw new Error(`group ${opts.groupId} did not catch up in time; lag:${lagSummary || ' (input done, offsets still moving)'}`);
        await sleep(250);
      }
    },
    opts.clientOptions ?? {},
  );
}
