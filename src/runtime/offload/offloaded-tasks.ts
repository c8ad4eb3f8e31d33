import type { OutgoingRecord } from '../../core/records.ts';
import { RecordSizeLimits } from '../../core/record-size.ts';
import { STAGE_KINDS } from '../../dsl/nodes.ts';
import type { CompiledSubtopology, SerdeUsage, TaskPlan } from '../../graph/types.ts';
import { createTask, type Task } from '../task/task.ts';
import { packOutputs, unpackRun, type PackedOutputs, type PackedRun } from './record-transfer.ts';


/**
 * The sub-topologies whose tasks the processing thread can run in place of the main thread: every stage
 * thread-safe (STAGE_KINDS), no store. Effects stay on the main thread (their clients and pools are the
 * worker's). Serdes go with their stages: one that talks to a schema registry has its own client on the
 * thread, prepared there (threadSerdeUsages) before any record.
 */
export function offloadableSubtopologies(plan: TaskPlan): number[] {
  return plan.subtopologies.filter(isOffloadable).map((s) => s.id);
}

function isOffloadable(sub: CompiledSubtopology): boolean {
  if (sub.stores.length > 0) return false;
  return sub.nodes.every((n) => STAGE_KINDS[n.kind].threadSafe && n.stores.length === 0);
}

/**
 * The serdes of the sub-topologies a thread runs (as `serdeUsages` lists them, their stores' changelogs
 * too): what the thread prepares before it takes records.
 */
export function threadSerdeUsages(plan: TaskPlan & { serdeUsages(): SerdeUsage[] }, subtopologies: readonly number[]): SerdeUsage[] {
  const run = new Set(subtopologies);
  const subs = plan.subtopologies.filter((s) => run.has(s.id));
  const topics = new Set(subs.flatMap((s) => s.nodes.flatMap((n) => (n.topic === undefined ? [] : [n.topic]))));
  for (const s of subs) for (const store of s.stores) topics.add(plan.stores.get(store)!.changelogTopic);
  return plan.serdeUsages().filter((usage) => topics.has(usage.ctx.topic));
}

/**
 * The stateful sub-topologies whose tasks a processing thread can host, stores and all: every stage
 * needs nothing only the main thread has (STAGE_KINDS' `hostable`). The stateless ones are offloaded
 * run by run instead (offloadableSubtopologies).
 */
export function hostableSubtopologies(plan: TaskPlan): number[] {
  return plan.subtopologies.filter((s) => !isOffloadable(s) && s.nodes.every((n) => STAGE_KINDS[n.kind].hostable)).map((s) => s.id);
}

/** What the thread made of one run: the outputs of its first `processed` records, and the task's stream time after them. */
export interface RunResult {
  readonly outputs: PackedOutputs;
  /** Records processed; fewer than the run's when one threw (the main thread then processes it and the rest itself). */
  readonly processed: number;
  readonly streamTime: number;
}

/**
 * The tasks of the offloadable sub-topologies, on the processing thread. Stateless, so a task here is
 * interchangeable with the main thread's task of the same partition: both compute the same outputs of
 * the same record, and neither remembers anything of it.
 */
export class OffloadedTasks {
  readonly #tasks = new Map<string, Task>();
  readonly #offloadable: ReadonlySet<number>;

  constructor(
    private readonly plan: TaskPlan,
    private readonly recordLimits: RecordSizeLimits,
  ) {
    this.#offloadable = new Set(offloadableSubtopologies(plan));
  }

  async process(subtopology: number, run: PackedRun, streamTime: number): Promise<RunResult> {
    if (!this.#offloadable.has(subtopology)) return { outputs: packOutputs([], []), processed: 0, streamTime };
    const task = this.#task(subtopology, run.partition, streamTime);
    const outputs: OutgoingRecord[] = [];
    const inputs: number[] = [];
    let index = 0;
    const collector = { send: (r: OutgoingRecord) => void (outputs.push(r), inputs.push(index)) };
    const records = unpackRun(run);
    let processed = 0;
    for (; processed < records.length; processed++) {
      index = processed;
      const before = outputs.length;
      try {
        const result = task.process(records[processed]!, collector);
        if (result) await result;
      } catch {
        // Thrown, not dead-lettered (a retriable error, a failing policy): the main thread processes this
        // record again, where the error surfaces as it would have, with its class and its handling.
        outputs.length = before;
        inputs.length = before;
        break;
      }
    }
    return { outputs: packOutputs(outputs, inputs), processed, streamTime: task.streamTime };
  }

  /** The task of `partition`, made on first use, its stream time that of the main thread's task. */
  #task(subtopology: number, partition: number, streamTime: number): Task {
    const id = `${subtopology}_${partition}`;
    let task = this.#tasks.get(id);
    if (task === undefined || task.streamTime < streamTime) {
      task = createTask(this.plan, subtopology, partition, { recordLimits: this.recordLimits, ...(Number.isFinite(streamTime) ? { initialStreamTime: streamTime } : {}) });
      this.#tasks.set(id, task);
    }
    return task;
  }
}
