import type { LibrdKafkaError } from '@confluentinc/kafka-javascript';
import { assignmentChanges, committedOffsets, cooperative } from '../../kafka/clients.ts';
import { parseCommitMetadata } from '../transaction/commit-metadata.ts';
import { partitionKey, type PartitionProgress, type PartitionRef } from '../base/partition-progress.ts';
import type { WorkerServices } from '../base/worker-services.ts';
import type { TaskManager } from '../task/task-manager.ts';
import { isAssignment } from '../transaction/kafka-errors.ts';
import type { TransactionDriver } from '../transaction/driver.ts';

/** Warm copies of tasks (runtime/standby/): each rebalance step runs while they stand still, and takes over the ones assigned here. */
export interface StandbyPort {
  exclusive<T>(step: () => Promise<T>): Promise<T>;
  release(partitions: readonly PartitionRef[]): Promise<void>;
  refreshSoon(): void;
}

interface RebalanceEvent {
  readonly kind: 'assign' | 'revoke';
  readonly partitions: PartitionRef[];
  readonly lost: boolean;
}

/**
 * Partitions coming and going. librdkafka calls back from inside a fetch; the change is queued and
 * carried out by the loop between batches, so that a revoked partition's open transaction is
 * committed (or, when the partition was lost, aborted) before its tasks close and it is handed back.
 */
export class RebalanceHandler {
  private readonly queue: RebalanceEvent[] = [];

  constructor(
    private readonly services: WorkerServices,
    private readonly tasks: TaskManager,
    private readonly progress: PartitionProgress,
    private readonly transaction: TransactionDriver,
    /** True once the loop has ended: no transaction is open any more. */
    private readonly loopEnded: () => boolean,
    private readonly standby?: StandbyPort,
  ) {}

  get pending(): boolean {
    return this.queue.length > 0;
  }

  /** The consumer's rebalance_cb. */
  readonly onRebalance = (err: LibrdKafkaError, assignment: PartitionRef[]): void => {
    const consumer = this.services.consumer();
    if (!consumer) return;
    const kind = isAssignment(err) ? 'assign' : 'revoke';
    const partitions = assignment.map((a) => ({ topic: a.topic, partition: a.partition }));
    let lost = false;
    try {
      lost = kind === 'revoke' && cooperative(consumer).assignmentLost();
    } catch {
      lost = false;
    }
    this.queue.push({ kind, partitions, lost });
    if (this.loopEnded()) this.handleNow();
  };

  /** During close there is no open transaction: hand partitions back at once so close does not hang. */
  private handleNow(): void {
    const consumer = this.services.consumer();
    if (!consumer) return;
    for (const event of this.queue.splice(0)) {
      try {
        if (event.kind === 'revoke') assignmentChanges(consumer).remove(event.partitions);
        else assignmentChanges(consumer).add(event.partitions);
      } catch {
        /* not connected any more */
      }
    }
  }

  async handle(): Promise<void> {
    if (!this.standby) return this.handleQueued();
    await this.standby.exclusive(() => this.handleQueued());
    this.standby.refreshSoon();
  }

  private async handleQueued(): Promise<void> {
    const { stats } = this.services;
    while (this.queue.length > 0) {
      const event = this.queue.shift();
      if (!event) break;
      const consumer = this.services.consumer();
      if (!consumer) return;
      stats.rebalances++;
      const names = event.partitions.map((p) => `${p.topic}-${p.partition}`);
      if (event.kind === 'revoke') {
        this.services.step('rebalance: revoke');
        if (this.transaction.open) {
          if (event.lost) await this.transaction.abort('partitions lost');
          else await this.transaction.commit();
        }
        for (const p of event.partitions) {
          const closed = this.tasks.dropSource(p);
          // Before the unassign: until then no other worker writes this task's changelog. Before forgetting the
          // partition's committed offset too: a table read from that topic is checkpointed at it.
          if (closed) await this.tasks.closeTaskState(closed, !event.lost);
          this.progress.forget(partitionKey(p.topic, p.partition));
        }
        assignmentChanges(consumer).remove(event.partitions);
        this.services.emit({ type: 'revoked', partitions: names, lost: event.lost });
      } else {
        // Restoring a new task's stores can take seconds: an open transaction would run on into the broker's
        // timeout meanwhile (and be fenced), so what it holds commits first.
        this.services.step('rebalance: commit before assign');
        if (this.transaction.open) await this.transaction.commit();
        this.services.step('rebalance: committed offsets');
        const streamTimes = await this.loadCommitted(event.partitions);
        await this.standby?.release(event.partitions);
        const fresh = this.tasks.addSources(event.partitions, streamTimes);
        this.services.step('rebalance: restore');
        await this.tasks.restore(fresh, (topic, partition) => this.progress.committed.get(partitionKey(topic, partition)));
        assignmentChanges(consumer).add(event.partitions.map((p) => this.progress.assignAt(p)));
        this.services.emit({ type: 'assigned', partitions: names });
      }
      stats.tasks = this.tasks.size;
    }
  }

  /**
   * After the loop aborted a transaction because a processing thread died under tasks it hosted: those
   * tasks are made again (on a live thread, else on the main thread) and restored from their changelogs,
   * resuming the stream time committed with their offsets, as for an assignment. Says so with a warning.
   */
  async replaceLost(why: string): Promise<void> {
    const partitions = this.tasks.dropLost();
    if (partitions.length === 0) return;
    const restarted = await this.tasks.restartDeadHosts();
    this.services.emit({ type: 'processing-thread', subtopologies: [], off: why, failed: true, restarted });
    const streamTimes = await this.loadCommitted(partitions);
    const fresh = this.tasks.addSources(partitions, streamTimes);
    await this.tasks.restore(fresh, (topic, partition) => this.progress.committed.get(partitionKey(topic, partition)));
  }

  /** Records each partition's committed offset; returns the stream time committed with it, where there is one. */
  private async loadCommitted(partitions: readonly PartitionRef[]): Promise<Map<string, number>> {
    const streamTimes = new Map<string, number>();
    const consumer = this.services.consumer();
    if (!consumer || partitions.length === 0) return streamTimes;
    const offsets = await committedOffsets(consumer, [...partitions], 30_000);
    for (const o of offsets) {
      const key = partitionKey(o.topic, o.partition);
      this.progress.committed.set(key, o.offset >= 0 ? o.offset : undefined);
      const streamTime = parseCommitMetadata(o.metadata)?.streamTime;
      if (streamTime !== undefined) streamTimes.set(key, streamTime);
    }
    return streamTimes;
  }
}
