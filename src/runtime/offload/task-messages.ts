import { RecordTooLargeError } from '../../core/record-size.ts';
import { isTransient, RetriableError } from '../../core/stage-errors.ts';
import { OnceflowError } from '../../errors.ts';
import type { TaskMetrics } from '../nodes/task-state.ts';
import type { PackedRun } from './record-transfer.ts';
import type { PackedResolved } from './resolved-outputs.ts';

/**
 * What the main thread asks of a task a processing thread hosts (thread-task.ts), and what the thread
 * answers (hosted-tasks.ts). A thread handles its requests one at a time in the order they came, so a
 * task's requests apply in the order the main thread made them: a rollback posted after a run undoes it.
 */
export type TaskRequest =
  | { readonly op: 'create'; readonly task: string; readonly subtopology: number; readonly partition: number; readonly initialStreamTime?: number }
  /** Changelog records to apply to committed state, packed like a run (offset and timestamp unused). */
  | { readonly op: 'restore'; readonly task: string; readonly stores: readonly string[]; readonly run: PackedRun }
  | { readonly op: 'process'; readonly task: string; readonly run: PackedRun }
  | { readonly op: 'advance'; readonly task: string; readonly timestamp: number }
  | { readonly op: 'prepareCommit'; readonly task: string }
  | { readonly op: 'commit'; readonly task: string }
  | { readonly op: 'rollback'; readonly task: string }
  | { readonly op: 'close'; readonly task: string };

/** The counters of a hosted task the worker reads between commits. */
export type HostedMetrics = Pick<TaskMetrics, 'lateRecordsDropped' | 'duplicatesDropped' | 'staleVersionsDropped'>;

/** A record a windowed stage dropped as too late, as the worker's `late-record` event tells it. */
export interface LateNotice {
  readonly stage: string;
  readonly store: string;
  readonly lateByMs: number;
  readonly topic: string;
  readonly partition: number;
  readonly offset: number;
}

export interface TaskAnswer {
  /** What the request made the task emit; absent when it emits nothing by its nature (commit, rollback, ...). */
  readonly emitted?: PackedResolved;
  /** At prepareCommit: the transaction's writes to queryable stores, packed like a run, `stores` naming each one's store. */
  readonly writes?: { readonly stores: readonly string[]; readonly run: PackedRun };
  readonly streamTime: number;
  readonly metrics: HostedMetrics;
  readonly joinMisses: readonly (readonly [string, number])[];
  readonly late: readonly LateNotice[];
  /** What the request threw: the main thread throws it again, where the loop handles it as its own. */
  readonly error?: ThrownOnThread;
}

/** An error as it crosses threads: its message and what the loop decides on (retriable, a refused record size). */
export interface ThrownOnThread {
  readonly message: string;
  readonly code?: string;
  readonly transient: boolean;
  readonly tooLarge?: { readonly topic: string; readonly bytes: number; readonly limit: number };
}

export function thrownOnThread(e: unknown): ThrownOnThread {
  const message = e instanceof Error ? e.message : String(e);
  const code = typeof (e as { code?: unknown } | null)?.code === 'string' ? (e as { code: string }).code : undefined;
  const tooLarge = e instanceof RecordTooLargeError ? { topic: e.topic, bytes: e.bytes, limit: e.limit } : undefined;
  return { message, ...(code === undefined ? {} : { code }), transient: isTransient(e), ...(tooLarge === undefined ? {} : { tooLarge }) };
}

/** A stage of a hosted task failed in a way the dead-letter policy does not take: the loop aborts the transaction, as for the main thread's. */
export class HostedTaskError extends OnceflowError {
  readonly code: string;
  constructor(task: string, thrown: ThrownOnThread) {
    super(`task ${task} (on a processing thread): ${thrown.message}`);
    this.code = thrown.code ?? 'HOSTED_TASK_FAILED';
  }
}

/** The error the main thread throws for what a hosted task threw: of the class the loop recognises. */
export function rethrown(task: string, thrown: ThrownOnThread): Error {
  if (thrown.tooLarge !== undefined) return new RecordTooLargeError(thrown.tooLarge.topic, thrown.tooLarge.bytes, thrown.tooLarge.limit);
  if (thrown.transient) return new RetriableError(`task ${task} (on a processing thread): ${thrown.message}`);
  return new HostedTaskError(task, thrown);
}

/**
 * The processing thread that hosts a task died (a crash, an out-of-memory, terminated): the task's
 * uncommitted state died with it. The loop aborts the open transaction, so nothing of it is visible,
 * and makes the thread's tasks again, on a live thread or the main thread, restored from their
 * changelogs (rebalance.ts replaceLost).
 */
export class ProcessingThreadDiedError extends OnceflowError {
  readonly code = 'PROCESSING_THREAD_DIED';
  constructor(task: string, why: string) {
    super(`the processing thread hosting task ${task} is gone (${why}): its uncommitted state with it; the transaction aborts and the task is restored elsewhere`);
  }
}
