import type { CommitCollector, IncomingRecord } from '../../core/records.ts';
import type { CompiledStore } from '../../graph/types.ts';
import type { StoreReader } from '../../state/queries.ts';
import { changelogPartitions, type ChangelogPartition } from '../task/task-stores.ts';
import { taskId } from '../task/task.ts';
import type { RuntimeTask } from '../task/worker-topology.ts';
import type { ProcessingThread } from './processing-thread.ts';
import { QueryMirror } from './query-mirror.ts';
import { packRun, type PackableRecord } from './record-transfer.ts';
import { applyResolved, type ResolvedSink } from './resolved-outputs.ts';
import { ProcessingThreadDiedError, rethrown, type HostedMetrics, type LateNotice, type TaskAnswer, type TaskRequest } from './task-messages.ts';

/** Changelog records sent to the thread in one message while a task restores. */
const RESTORE_CHUNK = 2_000;

export interface ThreadTaskParts {
  readonly thread: ProcessingThread;
  readonly subtopology: number;
  readonly partition: number;
  /** The stores of the task's sub-topology. */
  readonly stores: readonly CompiledStore[];
  /** The worker's collector: what the task emits goes into the open transaction as the thread numbered it. */
  readonly collector: Pick<ResolvedSink, 'sendResolved'>;
  readonly onLate: (late: LateNotice) => void;
  readonly initialStreamTime?: number | undefined;
  /** Told once the task is closed (the pool places tasks by how many each thread hosts). */
  readonly onClose?: () => void;
}

/**
 * A task hosted on a processing thread, as the main thread holds it: the same RuntimeTask the task
 * manager, the record path and the transaction drive, each call a request to the thread (task-messages.ts)
 * that owns the task's stores, record cache and stream time. Calls that return nothing (commit,
 * rollback, restore, close) are posted without waiting: the thread applies a task's requests in the
 * order they were made. Whatever the task emits comes back numbered and goes into the open transaction
 * here, so a commit covers every thread's outputs, changelog records and offsets, and an abort rolls
 * every thread's stores back.
 */
export class ThreadTask implements RuntimeTask {
  readonly id: string;
  readonly subtopology: number;
  readonly partition: number;
  readonly stateless = false;
  readonly changelogs: readonly ChangelogPartition[];
  readonly #parts: ThreadTaskParts;
  readonly #mirror: QueryMirror;
  #streamTime: number;
  #metrics: HostedMetrics = { lateRecordsDropped: 0, duplicatesDropped: 0, staleVersionsDropped: 0 };
  readonly #joinMisses = new Map<string, number>();
  #restoring: { stores: string[]; records: PackableRecord[] } = { stores: [], records: [] };
  /** What a request nobody waited for threw (a commit, a restore): the next request the main thread waits for throws it. */
  #failure: Error | undefined;
  #preparing: Promise<TaskAnswer | undefined> | undefined;

  constructor(parts: ThreadTaskParts) {
    this.#parts = parts;
    this.subtopology = parts.subtopology;
    this.partition = parts.partition;
    this.id = taskId(parts.subtopology, parts.partition);
    this.changelogs = changelogPartitions(parts.stores, parts.partition);
    this.#mirror = new QueryMirror(this.id, parts.stores);
    this.#streamTime = parts.initialStreamTime ?? Number.NEGATIVE_INFINITY;
    this.#post({ op: 'create', task: this.id, subtopology: parts.subtopology, partition: parts.partition, ...(parts.initialStreamTime !== undefined ? { initialStreamTime: parts.initialStreamTime } : {}) });
  }

  /** Its thread died, and its state with it. */
  get lost(): boolean {
    return !this.#parts.thread.alive;
  }

  get streamTime(): number {
    return this.#streamTime;
  }

  get metrics(): HostedMetrics {
    return this.#metrics;
  }

  get joinMisses(): ReadonlyMap<string, number> {
    return this.#joinMisses;
  }

  restore(store: string, key: Buffer, value: Buffer | null): void {
    this.#mirror.restore(store, key, value);
    this.#restoring.stores.push(store);
    this.#restoring.records.push({ offset: 0, timestamp: 0, key, value, headers: [], lineage: undefined });
    if (this.#restoring.records.length >= RESTORE_CHUNK) this.#flushRestore();
  }

  /** Sends a run of the task's records to its thread; `applyRun` puts the answer into the transaction. */
  processRun(records: readonly IncomingRecord[]): Promise<TaskAnswer | undefined> {
    const first = records[0]!;
    const run = packRun(first.topic, first.partition, records);
    return this.#request({ op: 'process', task: this.id, run }, [run.bytes, run.fields.buffer as ArrayBuffer]);
  }

  /** What a run emitted, into the open transaction; throws what the task threw on its thread. */
  applyRun(answer: TaskAnswer | undefined): void {
    const { emitted } = this.#settled(answer);
    if (emitted !== undefined) applyResolved(emitted, { sendResolved: (r, lineage, origin) => this.#parts.collector.sendResolved(r, lineage, origin), changelog: () => undefined });
  }

  async process(record: IncomingRecord): Promise<void> {
    this.applyRun(await this.processRun([record]));
  }

  async advanceStreamTime(timestamp: number): Promise<void> {
    this.applyRun(await this.#request({ op: 'advance', task: this.id, timestamp }));
  }

  /** Asks the thread for what the task holds back, without waiting: every hosted task prepares at once. */
  beginPrepareCommit(): void {
    this.#preparing ??= this.#request({ op: 'prepareCommit', task: this.id });
  }

  async prepareCommit(out: CommitCollector): Promise<void> {
    this.beginPrepareCommit();
    const answer = await this.#preparing;
    this.#preparing = undefined;
    const { emitted, writes } = this.#settled(answer);
    if (emitted !== undefined) applyResolved(emitted, { sendResolved: (r, lineage, origin) => this.#parts.collector.sendResolved(r, lineage, origin), changelog: out.changelog });
    this.#mirror.stage(writes);
  }

  commit(): void {
    this.#post({ op: 'commit', task: this.id });
    this.#mirror.commit();
  }

  rollback(): void {
    this.#preparing = undefined;
    this.#post({ op: 'rollback', task: this.id });
    this.#mirror.rollback();
  }

  close(): void {
    this.#restoring = { stores: [], records: [] };
    this.#post({ op: 'close', task: this.id });
    this.#parts.onClose?.();
  }

  reader(store: string): StoreReader {
    return this.#mirror.reader(store);
  }

  #flushRestore(): void {
    const { stores, records } = this.#restoring;
    if (records.length === 0) return;
    this.#restoring = { stores: [], records: [] };
    const run = packRun('', this.partition, records);
    this.#post({ op: 'restore', task: this.id, stores, run }, [run.bytes, run.fields.buffer as ArrayBuffer]);
  }

  /** A request whose answer nobody waits for: a failure is kept for the next one that is waited for. */
  #post(request: TaskRequest, transfer: readonly ArrayBuffer[] = []): void {
    void this.#request(request, transfer).then((answer) => {
      try {
        this.#settled(answer);
      } catch (e) {
        this.#failure ??= e as Error;
      }
    });
  }

  #request(request: TaskRequest, transfer: readonly ArrayBuffer[] = []): Promise<TaskAnswer | undefined> {
    if (request.op !== 'restore') this.#flushRestore();
    return this.#parts.thread.request(request, transfer);
  }

  /** The answer's news of the task taken in; throws if the thread died or the task threw there. */
  #settled(answer: TaskAnswer | undefined): TaskAnswer {
    if (this.#failure !== undefined) throw this.#failure;
    if (answer === undefined) throw new ProcessingThreadDiedError(this.id, this.#parts.thread.failure ?? 'stopped');
    this.#streamTime = answer.streamTime;
    this.#metrics = answer.metrics;
    for (const [join, misses] of answer.joinMisses) this.#joinMisses.set(join, misses);
    for (const late of answer.late) this.#parts.onLate(late);
    if (answer.error !== undefined) throw rethrown(this.id, answer.error);
    return answer;
  }
}
