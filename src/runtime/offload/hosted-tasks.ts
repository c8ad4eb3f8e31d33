import type { RecordSizeLimits } from '../../core/record-size.ts';
import type { TaskPlan } from '../../graph/types.ts';
import { CacheBudget } from '../nodes/record-cache.ts';
import { IllegalTransitionError } from '../base/errors.ts';
import { createTask, type Task } from '../task/task.ts';
import { packRun, unpackRun, type PackableRecord, type PackedRun } from './record-transfer.ts';
import { ResolvingCollector } from './resolved-outputs.ts';
import { thrownOnThread, type LateNotice, type TaskAnswer, type TaskRequest } from './task-messages.ts';

/** The record cache a thread's hosted tasks share, as the worker's config sets it (each thread has its own budget). */
export interface HostedCache {
  readonly maxBytes: number;
  readonly maxRecords?: number | undefined;
}

/**
 * The tasks a processing thread hosts, with their stores, record caches and stream time: the main
 * thread sends their records, asks for what they hold back at the commit, and tells them the
 * transaction's outcome (thread-task.ts is its side). Everything a task emits is numbered here
 * (ResolvingCollector) and put into the transaction by the main thread.
 */
export class HostedTasks {
  readonly #tasks = new Map<string, Task>();
  readonly #collector = new ResolvingCollector();
  readonly #cache: { readonly budget: CacheBudget; readonly maxRecords?: number } | undefined;
  #late: LateNotice[] = [];

  constructor(
    private readonly plan: TaskPlan,
    private readonly recordLimits: RecordSizeLimits,
    cache: HostedCache | undefined,
  ) {
    this.#cache = cache === undefined ? undefined : { budget: new CacheBudget(cache.maxBytes), ...(cache.maxRecords !== undefined ? { maxRecords: cache.maxRecords } : {}) };
  }

  async handle(request: TaskRequest): Promise<TaskAnswer> {
    let task: Task | undefined;
    try {
      if (request.op === 'create') {
        task = createTask(this.plan, request.subtopology, request.partition, {
          recordLimits: this.recordLimits,
          cache: this.#cache,
          onLateRecord: (late) => this.#late.push({ stage: late.stage, store: late.store, lateByMs: late.lateByMs, topic: late.record.topic, partition: late.record.partition, offset: late.record.offset }),
          ...(request.initialStreamTime !== undefined ? { initialStreamTime: request.initialStreamTime } : {}),
        });
        this.#tasks.set(request.task, task);
        return this.#answer(task, false);
      }
      task = this.#task(request.task);
      switch (request.op) {
        case 'restore': {
          const records = unpackRun(request.run);
          for (let i = 0; i < records.length; i++) task.restore(request.stores[i]!, records[i]!.key!, records[i]!.value);
          return this.#answer(task, false);
        }
        case 'process':
          for (const record of unpackRun(request.run)) {
            const result = task.process(record, this.#collector.aim(record));
            if (result) await result;
          }
          return this.#answer(task, true);
        case 'advance': {
          const result = task.advanceStreamTime(request.timestamp, this.#collector);
          if (result) await result;
          return this.#answer(task, true);
        }
        case 'prepareCommit': {
          const result = task.prepareCommit(this.#collector);
          if (result) await result;
          return { ...this.#answer(task, true), writes: packWrites(task) };
        }
        case 'commit':
          task.commit();
          return this.#answer(task, false);
        case 'rollback':
          task.rollback();
          return this.#answer(task, false);
        case 'close':
          this.#tasks.delete(request.task);
          return this.#answer(task, false);
      }
    } catch (e) {
      // What the task emitted before it threw goes nowhere: the main thread aborts the transaction.
      this.#collector.take();
      return { ...(task === undefined ? EMPTY_STATUS : this.#answer(task, false)), error: thrownOnThread(e) };
    }
  }

  #task(id: string): Task {
    const task = this.#tasks.get(id);
    if (task === undefined) throw new IllegalTransitionError('hosted tasks', 'RUNNING', 'handle', undefined, `task ${id} is not hosted on this thread`);
    return task;
  }

  #answer(task: Task, emitted: boolean): TaskAnswer {
    const { lateRecordsDropped, duplicatesDropped, staleVersionsDropped } = task.metrics;
    const late = this.#late;
    if (late.length > 0) this.#late = [];
    return {
      ...(emitted ? { emitted: this.#collector.take() } : {}),
      streamTime: task.streamTime,
      metrics: { lateRecordsDropped, duplicatesDropped, staleVersionsDropped },
      joinMisses: [...task.joinMisses],
      late,
    };
  }
}

/** The transaction's writes to the task's queryable stores, for the main thread's copy of committed state (query-mirror.ts). */
function packWrites(task: Task): { stores: string[]; run: PackedRun } {
  const stores: string[] = [];
  const records: PackableRecord[] = [];
  for (const { store, key, value } of task.queryableWrites()) {
    stores.push(store);
    records.push({ offset: 0, timestamp: 0, key, value, headers: [], lineage: undefined });
  }
  return { stores, run: packRun('', task.partition, records) };
}

const EMPTY_STATUS: TaskAnswer = { streamTime: Number.NEGATIVE_INFINITY, metrics: { lateRecordsDropped: 0, duplicatesDropped: 0, staleVersionsDropped: 0 }, joinMisses: [], late: [] };
