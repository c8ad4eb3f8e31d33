import type { KafkaConsumer } from '@confluentinc/kafka-javascript';
import { watermarks } from '../../kafka/clients.ts';
import type { ChangelogOffset, PersistentTaskState } from '../../state/lmdb-store.ts';
import type { StoreReader } from '../../state/queries.ts';
import type { RuntimeTask } from '../task/worker-topology.ts';

/** How the keeper names a changelog partition. */
export const changelogKey = (topic: string, partition: number): string => `${topic}\u0000${partition}`;

/**
 * One task kept warm on a replica that does not own it: its persistent stores in the directory the
 * task itself would use here, and the next changelog offset to apply to each. Records are applied
 * in order and read read_committed, so every record below a position is in the stores: a position is
 * a valid checkpoint (lmdb-store.ts), and the task that opens this directory later restores only
 * from there.
 *
 * A table read from its own source topic is not kept warm: its store stands at the group's committed
 * offset of that topic, which a standby does not follow. That store is absent from the checkpoint,
 * so the task rebuilds it from the source topic when it moves here, as it does today.
 */
export class WarmTask {
  /** Next offset to apply, by changelog partition. */
  readonly positions = new Map<string, number>();
  readonly #storeOf = new Map<string, string>();
  readonly #ended = new Set<string>();
  #caughtUp = false;
  #applied = 0;

  private constructor(
    readonly id: string,
    private readonly state: PersistentTaskState,
    private readonly task: RuntimeTask,
  ) {}

  /** Opens the task's stores where its last checkpoint left them (or empty) and finds where each changelog resumes. */
  static async open(id: string, state: PersistentTaskState, task: RuntimeTask, offsetsOf: KafkaConsumer): Promise<WarmTask> {
    const warm = new WarmTask(id, state, task);
    try {
      for (const c of task.changelogs) {
        if (c.sourceTopic === true) continue;
        const { low, high } = await watermarks(offsetsOf, c.topic, c.partition, 10_000);
        warm.positions.set(changelogKey(c.topic, c.partition), state.restoreFrom(c.store, c.topic, c.partition, low, high));
        warm.#storeOf.set(changelogKey(c.topic, c.partition), c.store);
      }
      state.startProcessing();
    } catch (e) {
      await state.close();
      throw e;
    }
    return warm;
  }

  /** A store's content as applied so far, for stale interactive queries. */
  reader(store: string): StoreReader | undefined {
    return this.task.reader?.(store);
  }

  /** Changelog records applied since it was opened. */
  get applied(): number {
    return this.#applied;
  }

  /** The changelog partitions to read, each from its position. */
  assignment(): { topic: string; partition: number; offset: number }[] {
    return this.task.changelogs.filter((c) => c.sourceTopic !== true).map((c) => ({ topic: c.topic, partition: c.partition, offset: this.positions.get(changelogKey(c.topic, c.partition)) ?? 0 }));
  }

  /** Applies one changelog record; one already applied (a fetch from before a reassignment) is skipped. */
  apply(key: string, offset: number, recordKey: Buffer | null, value: Buffer | null): boolean {
    const position = this.positions.get(key);
    const store = this.#storeOf.get(key);
    if (position === undefined || store === undefined || offset < position) return false;
    this.positions.set(key, offset + 1);
    if (recordKey === null) return false;
    this.task.restore(store, recordKey, value);
    this.#applied++;
    return true;
  }

  /** A changelog partition's end was reached; true the first time every one of them has been: the copy is warm. */
  reachedEnd(key: string): boolean {
    if (this.#caughtUp || !this.#storeOf.has(key)) return false;
    this.#ended.add(key);
    this.#caughtUp = this.#ended.size === this.#storeOf.size;
    return this.#caughtUp;
  }

  /** Syncs the stores and records the positions: a restart of this replica resumes from here too. */
  checkpoint(): Promise<void> {
    return this.state.checkpoint(this.#checkpointOffsets());
  }

  /** Syncs, checkpoints and closes: the directory is left for the task to open. */
  close(): Promise<void> {
    return this.state.close(this.#checkpointOffsets());
  }

  #checkpointOffsets(): ChangelogOffset[] {
    return this.assignment().map(({ topic, partition, offset }) => ({ topic, partition, offset }));
  }
}
