import { randomUUID } from 'node:crypto';
import { join } from 'node:path';
import type { KafkaConsumer } from '@confluentinc/kafka-javascript';
import { consumeBatch, disconnect, READ_TO_END_CONFIG } from '../../kafka/clients.ts';
import type { PersistentTaskState } from '../../state/lmdb-store.ts';
import type { StoreReader } from '../../state/queries.ts';
import type { PartitionRef } from '../base/partition-progress.ts';
import type { WorkerServices } from '../base/worker-services.ts';
import { taskId } from '../task/task.ts';
import type { RuntimeTopology } from '../task/worker-topology.ts';
import { groupMembers } from './group-members.ts';
import { standbyTasks, type GroupMemberAssignment } from './standby-placement.ts';
import { changelogKey, WarmTask } from './warm-task.ts';

export interface StandbyOptions {
  readonly topology: RuntimeTopology;
  readonly services: WorkerServices;
  /** Whether this worker runs the task itself now (then it is not kept warm: it is live). */
  readonly owns: (subtopology: number, partition: number) => boolean;
  /** The group's members and what each owns; the coordinator's description by default. */
  readonly members?: () => Promise<readonly GroupMemberAssignment[] | undefined>;
  /** How often the group is looked at again (besides after each rebalance). */
  readonly refreshMs?: number;
}

/**
 * Standby tasks (Kafka Streams' num.standby.replicas): warm copies of stateful tasks other replicas
 * own, kept in this replica's persistent stores by reading their changelogs read_committed, so that
 * a task that moves here restores only the tail written since. Placement is standby-placement.ts;
 * one warm task is warm-task.ts.
 *
 * Every change of what is kept warm, and every rebalance step of the worker (`exclusive`), runs one
 * at a time: a task's directory is never open twice, as a warm copy and as the live task.
 */
export class StandbyTasks {
  readonly #warm = new Map<string, WarmTask>();
  readonly #byChangelog = new Map<string, WarmTask>();
  readonly #statefulSubtopologyOf = new Map<string, number>();
  readonly #subtopologyOf = new Map<string, number>();
  #consumer: KafkaConsumer | undefined;
  #chain: Promise<unknown> = Promise.resolve();
  #running = false;
  #pump: Promise<void> | undefined;
  #timer: NodeJS.Timeout | undefined;
  #lastCheckpointAt = Date.now();
  #persistentState: typeof PersistentTaskState | undefined;

  constructor(private readonly options: StandbyOptions) {
    const logged = new Set([...(options.topology.stores?.values() ?? [])].filter((s) => s.sourceTopicChangelog !== true).map((s) => s.subtopology));
    for (const sub of options.topology.subtopologies) {
      for (const topic of sub.sourceTopics) {
        this.#subtopologyOf.set(topic, sub.id);
        if (logged.has(sub.id)) this.#statefulSubtopologyOf.set(topic, sub.id);
      }
    }
  }

  /** Nothing to keep warm: a topology without logged stores. */
  get needed(): boolean {
    return this.#statefulSubtopologyOf.size > 0;
  }

  /** A store of a task kept warm here, if it is. */
  reader(subtopology: number, partition: number, store: string): StoreReader | undefined {
    return this.#warm.get(taskId(subtopology, partition))?.reader(store);
  }

  /** Task ids kept warm now. */
  tasks(): string[] {
    return [...this.#warm.keys()].sort();
  }

  async start(): Promise<void> {
    const { services } = this.options;
    this.#persistentState = (await import('../../state/lmdb-store.ts')).PersistentTaskState;
    this.#consumer = await services.clients.consumer({ ...services.clientConfig(), 'group.id': `onceflow-standby-${randomUUID()}`, ...READ_TO_END_CONFIG });
    this.#consumer.on('partition.eof', (end) => {
      const key = changelogKey(end.topic, end.partition);
      const warm = this.#byChangelog.get(key);
      if (warm?.reachedEnd(key) === true) services.emit({ type: 'standby', tasks: this.tasks(), adopted: [], dropped: [], released: [], caughtUp: [warm.id] });
    });
    this.#running = true;
    this.#pump = this.#pumpRecords();
    const every = this.options.refreshMs ?? 3_000;
    this.#timer = setInterval(() => this.refreshSoon(), every);
    this.#timer.unref();
    this.refreshSoon();
  }

  /** Runs `step` with nothing else changing what is kept warm meanwhile (the worker's rebalance steps). */
  exclusive<T>(step: () => Promise<T>): Promise<T> {
    const run = this.#chain.then(step);
    this.#chain = run.catch(() => undefined);
    return run;
  }

  /** Looks at the group again soon (after a rebalance moved tasks). */
  refreshSoon(): void {
    if (!this.#running) return;
    void this.#refresh().catch((e: unknown) => this.#warn(`the group could not be looked at: ${String(e)}`));
  }

  /**
   * Before this worker makes tasks of newly assigned partitions, inside `exclusive`: their warm copies
   * are checkpointed and closed, so the tasks open the same directories and restore only the tail.
   */
  async release(partitions: readonly PartitionRef[]): Promise<void> {
    const ids = new Set(partitions.flatMap((p) => {
      const sub = this.#subtopologyOf.get(p.topic);
      return sub === undefined ? [] : [taskId(sub, p.partition)];
    }));
    const released = [...ids].filter((id) => this.#warm.has(id));
    if (released.length === 0) return;
    await this.#drop(released);
    this.options.services.stats.standbyTasks = this.#warm.size;
    this.options.services.emit({ type: 'standby', tasks: this.tasks(), adopted: [], dropped: [], released });
  }

  async close(): Promise<void> {
    this.#running = false;
    if (this.#timer) clearInterval(this.#timer);
    // Outside `exclusive`: the pump may be waiting in it for a checkpoint.
    await this.#pump;
    await this.exclusive(async () => {
      await this.#drop([...this.#warm.keys()]);
      if (this.#consumer) await disconnect(this.#consumer);
      this.#consumer = undefined;
    });
  }

  async #refresh(): Promise<void> {
    const members = await (this.options.members ?? (() => groupMembers(this.options.services)))();
    if (members === undefined || !this.#running) return;
    await this.exclusive(async () => {
      if (!this.#running) return;
      const { services, owns } = this.options;
      const wanted = standbyTasks(services.transactionalId, members, this.#statefulSubtopologyOf, services.config.standbyReplicas);
      const placed = standbyTasks(services.transactionalId, members, this.#statefulSubtopologyOf, Number.MAX_SAFE_INTEGER);
      // A warm task no other member owns now is moving: kept, as the best start for whoever gets it.
      const dropped = [...this.#warm.keys()].filter((id) => placed.has(id) && !wanted.has(id));
      const adopted = [...wanted].filter((id) => !this.#warm.has(id) && !owns(...parseTaskId(id)));
      if (dropped.length > 0) await this.#drop(dropped);
      const opened: string[] = [];
      for (const id of adopted) {
        try {
          await this.#adopt(id);
          opened.push(id);
        } catch (e) {
          this.#warn(`task ${id} could not be kept warm: ${String(e)}`);
        }
      }
      if (opened.length > 0) this.#assign();
      services.stats.standbyTasks = this.#warm.size;
      if (dropped.length > 0 || opened.length > 0) services.emit({ type: 'standby', tasks: this.tasks(), adopted: opened, dropped, released: [] });
    });
  }

  async #adopt(id: string): Promise<void> {
    const consumer = this.#consumer;
    const PersistentState = this.#persistentState;
    if (!consumer || !PersistentState) return;
    const { config } = this.options.services;
    const [sub, partition] = parseTaskId(id);
    const state = new PersistentState(join(config.stateDir, config.appId, config.instanceId, id));
    const task = this.options.topology.createTask(sub, partition, { storeFactory: state.storeFactory });
    const warm = await WarmTask.open(id, state, task, consumer);
    this.#warm.set(id, warm);
    for (const key of warm.positions.keys()) this.#byChangelog.set(key, warm);
  }

  async #drop(ids: readonly string[]): Promise<void> {
    const closing: WarmTask[] = [];
    for (const id of ids) {
      const warm = this.#warm.get(id);
      if (!warm) continue;
      this.#warm.delete(id);
      for (const key of warm.positions.keys()) this.#byChangelog.delete(key);
      closing.push(warm);
    }
    this.#assign();
    for (const warm of closing) {
      try {
        await warm.close();
      } catch (e) {
        // No checkpoint: the task that opens the directory finds none and restores from the start, which is exact.
        this.#warn(`the warm copy of task ${warm.id} was not checkpointed: ${String(e)}`);
      }
    }
  }

  /** A manual assignment of every warm changelog partition at its position (a record fetched twice is skipped). */
  #assign(): void {
    const consumer = this.#consumer;
    if (!consumer) return;
    const assignment = [...this.#warm.values()].flatMap((w) => w.assignment());
    if (assignment.length === 0) consumer.unassign();
    else consumer.assign(assignment);
  }

  async #pumpRecords(): Promise<void> {
    const { services } = this.options;
    while (this.#running) {
      const consumer = this.#consumer;
      if (!consumer || this.#warm.size === 0) {
        await new Promise((resolve) => setTimeout(resolve, 200));
        continue;
      }
      let batch;
      try {
        batch = await consumeBatch(consumer, 2_000);
      } catch (e) {
        this.#warn(`reading changelogs failed: ${String(e)}`);
        await new Promise((resolve) => setTimeout(resolve, 1_000));
        continue;
      }
      let applied = 0;
      for (const m of batch) {
        const key = changelogKey(m.topic, m.partition);
        const recordKey = m.key === null || m.key === undefined ? null : typeof m.key === 'string' ? Buffer.from(m.key) : m.key;
        if (this.#byChangelog.get(key)?.apply(key, m.offset, recordKey, m.value ?? null) === true) applied++;
      }
      services.stats.standbyRecords += applied;
      services.stats.standbyLag = this.#lag(consumer);
      if (batch.length === 0) await new Promise((resolve) => setTimeout(resolve, 50));
      await this.#checkpointIfDue();
    }
  }

  /** As often as the live tasks are checkpointed: a restart of this replica resumes its warm copies from there. */
  async #checkpointIfDue(): Promise<void> {
    const every = this.options.services.config.stateCheckpointIntervalMs;
    if (every <= 0 || Date.now() - this.#lastCheckpointAt < every) return;
    this.#lastCheckpointAt = Date.now();
    await this.exclusive(async () => {
      for (const warm of this.#warm.values()) await warm.checkpoint().catch(() => undefined);
    });
  }

  /**
   * From the ends the consumer cached on its last fetches and its fetch positions, which step over
   * commit markers (a copy's own positions stop at the last record): no request.
   */
  #lag(consumer: KafkaConsumer): number {
    let behind = 0;
    try {
      for (const p of consumer.position([...this.#warm.values()].flatMap((w) => w.assignment()))) {
        const end = consumer.getWatermarkOffsets(p.topic, p.partition).highOffset;
        if (end >= 0 && p.offset >= 0) behind += Math.max(0, end - p.offset);
      }
    } catch {
      // Not fetched yet: the last figure stands.
      return this.options.services.stats.standbyLag;
    }
    return behind;
  }

  #warn(reason: string): void {
    this.options.services.emit({ type: 'standby-failed', reason });
  }
}

function parseTaskId(id: string): [number, number] {
  const [sub, partition] = id.split('_');
  return [Number(sub), Number(partition)];
}
