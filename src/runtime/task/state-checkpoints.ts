import type { ChangelogOffset, PersistentTaskState } from '../../state/lmdb-store.ts';
import type { RuntimeTask } from './worker-topology.ts';

/** A changelog partition's end as the broker reports it now (its high watermark). */
export type ChangelogEnd = (topic: string, partition: number) => Promise<number>;

interface Reading {
  /** The persistent state each task had when its changelog ends were asked for: a task reassigned since is skipped. */
  readonly states: ReadonlyMap<RuntimeTask, PersistentTaskState>;
  offsets?: Map<RuntimeTask, ChangelogOffset[]>;
  /** Transactions committed when the answer arrived. */
  commitsWhenAnswered?: number;
}

/**
 * Checkpoints of persistent stores while the worker runs, so that a replica killed mid-stream
 * resumes from its local stores and the changelog's tail instead of the whole changelog.
 *
 * A checkpoint must be a lower bound (lmdb-store.ts): every changelog record below it already in the
 * store. The end a broker reports may include records of the transaction open when it answered, whose
 * writes reach the store only once that transaction commits. So the ends are asked for after one
 * commit, without waiting, and written only after a later commit, once the stores are synced: by
 * then every transaction that wrote below those ends has committed (and was applied) or aborted
 * (and is never read back).
 */
export class StateCheckpoints {
  private reading: Reading | undefined;
  private lastAt = Date.now();

  constructor(
    private readonly intervalMs: number,
    private readonly changelogEnd: ChangelogEnd,
    /** Transactions the worker has committed so far. */
    private readonly commits: () => number,
    /** The group's committed offset of a table's source partition: where its store stands (undefined: none yet). */
    private readonly sourceCommitted: (topic: string, partition: number) => number | undefined = () => undefined,
  ) {}

  /** After each commit, with the persistent state of each task now. */
  async afterCommit(states: ReadonlyMap<RuntimeTask, PersistentTaskState>): Promise<void> {
    if (this.intervalMs <= 0 || states.size === 0) return;
    const commits = this.commits();
    const reading = this.reading;
    if (reading?.offsets !== undefined && reading.commitsWhenAnswered !== undefined && commits > reading.commitsWhenAnswered) {
      this.reading = undefined;
      this.lastAt = Date.now();
      for (const [task, offsets] of reading.offsets) {
        const state = states.get(task);
        if (state === undefined || state !== reading.states.get(task)) continue;
        try {
          await state.checkpoint(offsets);
        } catch {
          // Not written (the disk refused): the task's last checkpoint stays valid, only older.
        }
      }
      return;
    }
    if (reading !== undefined || Date.now() - this.lastAt < this.intervalMs) return;
    const started: Reading = { states: new Map(states) };
    this.reading = started;
    this.read(started).catch(() => {
      // No checkpoint this time (the broker did not answer): the last one stays valid, only older.
      if (this.reading === started) this.reading = undefined;
    });
  }

  private async read(reading: Reading): Promise<void> {
    const offsets = new Map<RuntimeTask, ChangelogOffset[]>();
    for (const task of reading.states.keys()) {
      const logged = task.changelogs.filter((c) => c.sourceTopic !== true);
      const ends = await Promise.all(logged.map(async (c) => ({ topic: c.topic, partition: c.partition, offset: await this.changelogEnd(c.topic, c.partition) })));
      offsets.set(task, [...ends, ...sourceTopicOffsets(task, this.sourceCommitted)]);
    }
    reading.offsets = offsets;
    reading.commitsWhenAnswered = this.commits();
  }
}

/**
 * A table read from a topic stands at the group's committed offset of that topic, not at its end (the
 * records after it are not processed yet): that offset, read after a commit, is a lower bound of what
 * its store holds, as a changelog end read after a commit is of the others.
 */
export function sourceTopicOffsets(task: RuntimeTask, committedOf: (topic: string, partition: number) => number | undefined): ChangelogOffset[] {
  const out: ChangelogOffset[] = [];
  for (const c of task.changelogs) {
    if (c.sourceTopic !== true) continue;
    const offset = committedOf(c.topic, c.partition);
    if (offset !== undefined) out.push({ topic: c.topic, partition: c.partition, offset });
  }
  return out;
}
