// What every stage of a task shares: the record in flight, stream time, what the record emitted,
// how a failed stage call is retried or dead-lettered. The stages themselves are RuntimeNodes (runtime-node.ts).
import type { RecordTracer } from '../../observability/tracing/port.ts';
import type { RetryPolicy } from '../../dsl/types.ts';
import type { IncomingRecord, OutgoingRecord, RecordHeader, RecordOrigin } from '../../core/records.ts';
import type { CacheBudget, RecordCache, CachedResult } from './record-cache.ts';
import { errorCode, PermanentError, RetriableError } from '../../core/stage-errors.ts';
import type { Step } from './step.ts';
import { AsyncStageResultError, StageFailure } from './node-errors.ts';
import { DEAD_LETTER } from '../../core/headers.ts';
import { deadLetterBody, RecordTooLargeError, type RecordSizeLimits } from '../../core/record-size.ts';
import { TaskRecordContext } from './record-context.ts';

export interface RecordCacheOptions {
  /** The bytes the worker's caches hold together. */
  readonly budget: CacheBudget;
  /** Keys each aggregate of a task holds at most. */
  readonly maxRecords: number;
}

export interface TaskMetrics {
  recordsProcessed: number;
  deadLettered: number;
  retries: number;
  /** Records dropped because every window they belong to had closed (stream time past end + grace). */
  lateRecordsDropped: number;
  duplicatesDropped: number;
  staleVersionsDropped: number;
  /** Records with a null key that reached a stateful stage (dropped, as Kafka Streams does). */
  nullKeysDropped: number;
}

export interface TaskEnvironment {
  readonly retryPolicyFor: (node: string) => RetryPolicy;
  readonly unknownErrors: 'permanent' | 'retriable';
  readonly deadLetterTopic: string;
  readonly now: () => number;
  readonly sleep: (ms: number) => Promise<void>;
  readonly random: () => number;
  /** The record cache of the key-value aggregates: undefined, every update goes downstream at once. */
  readonly cache: RecordCacheOptions | undefined;
  /** What one produced record may carry, per topic (see core/record-size.ts). */
  readonly recordLimits: RecordSizeLimits;
  /** The rows of each global table, by store name; read-only to the task. */
  readonly globalRows?: (store: string) => { row(key: unknown): unknown } | undefined;
  /** Told of each record a windowed aggregate drops as too late (the worker logs them, rate-limited). */
  readonly onLateRecord?: ((late: LateRecord) => void) | undefined;
  /** The worker's tracer (observability/tracing/): effect stages give their calls a span. Null when tracing is off. */
  readonly tracer: RecordTracer | null;
}

/** A record behind the grace period of every window it belongs to. */
export interface LateRecord {
  readonly stage: string;
  readonly store: string;
  /** How far stream time is past the close of the last window the record belongs to. */
  readonly lateByMs: number;
  readonly record: IncomingRecord;
}

const MAX_STACK = 8192;

function header(key: string, value: string): RecordHeader {
  return { key, value: Buffer.from(value, 'utf8') };
}

/**
 * The mutable per-task state the nodes share. One record is in flight at a time, so the current
 * record lives here instead of being passed (and allocated) per call.
 */
export class TaskState {
  current!: IncomingRecord;
  /** What the current run's outputs are sent with: the current record's own origin, or during a release the released one. */
  origin!: RecordOrigin;
  #released: RecordOrigin | undefined;
  /** Event time of the current record. */
  timestamp = 0;
  /** The headers what the current record emits carries: its own, unless a `setHeaders` stage upstream set others. */
  headers: readonly RecordHeader[] = [];
  /** Stage functions' `ctx` argument. */
  readonly record: TaskRecordContext = new TaskRecordContext(this);
  streamTime = Number.NEGATIVE_INFINITY;
  /** Increments per input record; effect stages use it to number fan-out within one record. */
  seq = 0;
  busy = false;
  /** Everything the current record emits, released to the collector only if the record succeeds. */
  readonly out: OutgoingRecord[] = [];
  readonly metrics: TaskMetrics = { recordsProcessed: 0, deadLettered: 0, retries: 0, lateRecordsDropped: 0, duplicatesDropped: 0, staleVersionsDropped: 0, nullKeysDropped: 0 };
  /** Per join stage, stream records that found no row (an inner join drops them silently, a left join emits null). */
  readonly joinMisses = new Map<string, number>();
  readonly timeListeners: StreamTimeListener[] = [];
  /** Aggregates that hold back their results (a record cache is configured). */
  readonly caching: CachingNode[] = [];
  /** Processor stages: their punctuation schedules follow records, commits and rollbacks. */
  readonly punctuating: PunctuatingNode[] = [];

  constructor(
    readonly partition: number,
    readonly env: TaskEnvironment,
  ) {}

  /** A run for `record` starts: its outputs get a fresh origin, numbered from 0. */
  begin(record: IncomingRecord): void {
    this.current = record;
    this.headers = record.headers;
    this.origin = { record, released: false, seq: 0, lineagePrefix: undefined };
    this.#released = undefined;
  }

  /** A run for a result held back on behalf of `origin.record` starts: outputs continue its released numbering. */
  resume(origin: RecordOrigin): void {
    this.current = origin.record;
    this.headers = origin.record.headers;
    this.origin = origin;
    this.#released = origin;
  }

  /** The origin of what a cache holds back for the current record, one per record however many caches hold results for it. */
  releasedOrigin(): RecordOrigin {
    return (this.#released ??= { record: this.current, released: true, seq: 0, lineagePrefix: undefined });
  }

  /** Moves stream time forward (never back) and lets windows close. */
  observe(ts: number): Step {
    this.timestamp = ts;
    if (!(ts > this.streamTime)) return;
    this.streamTime = ts;
    return this.runTimeListeners(0);
  }

  runTimeListeners(from: number): Step {
    const ls = this.timeListeners;
    for (let i = from; i < ls.length; i++) {
      const r = ls[i]!.fireStreamTime();
      if (r !== undefined) return r.then(() => this.runTimeListeners(i + 1));
    }
  }

  /** Decides between retrying a failed stage call and giving up on the record. */
  onStageError(node: RetriedStage, e: unknown, key: unknown, value: unknown, attempt: number): Step {
    if (e instanceof StageFailure || e instanceof AsyncStageResultError) throw e;
    const retriable = e instanceof RetriableError || (!(e instanceof PermanentError) && this.env.unknownErrors === 'retriable');
    const policy = this.env.retryPolicyFor(node.name);
    if (retriable && attempt < policy.maxAttempts) {
      this.metrics.retries++;
      const base = Math.min(policy.maxBackoffMs, policy.initialBackoffMs * 2 ** (attempt - 1));
      // equal jitter: spreads retries of many tasks while keeping at least half the backoff
      const delay = base / 2 + (base / 2) * this.env.random();
      return this.env.sleep(delay).then(() => node.attempt(key, value, attempt + 1));
    }
    const code = retriable ? 'RETRIES_EXHAUSTED' : errorCode(e, 'UNHANDLED_ERROR');
    throw new StageFailure(node.name, e, attempt, code);
  }

  /**
   * The current input record, as it was read (or an excerpt of it, see deadLetterBody), with the
   * error headers the dead-letter contract names.
   */
  deadLetterRecord(code: string, message: string, stack: string, attempts: number, stage: string, excerpt = false): OutgoingRecord {
    const rec = this.current;
    const topic = this.env.deadLetterTopic;
    const body = deadLetterBody(topic, rec, this.#errorHeaders(code, message, stack, attempts, stage), this.env.recordLimits, excerpt);
    return { topic, key: body.key, value: body.value, timestamp: rec.timestamp, headers: body.headers };
  }

  #errorHeaders(code: string, message: string, stack: string, attempts: number, stage: string): RecordHeader[] {
    const rec = this.current;
    return [
      header(DEAD_LETTER.code, code),
      header(DEAD_LETTER.message, message.length > MAX_STACK ? message.slice(0, MAX_STACK) : message),
      header(DEAD_LETTER.stack, stack.length > MAX_STACK ? stack.slice(0, MAX_STACK) : stack),
      header(DEAD_LETTER.attempts, String(attempts)),
      header(DEAD_LETTER.sourceTopic, rec.topic),
      header(DEAD_LETTER.sourcePartition, String(rec.partition)),
      header(DEAD_LETTER.sourceOffset, String(rec.offset)),
      header(DEAD_LETTER.stage, stage),
      header(DEAD_LETTER.time, String(this.env.now())),
    ];
  }

  failureRecord(f: StageFailure): OutgoingRecord {
    const e = f.error;
    const message = e instanceof Error ? e.message : String(e);
    const stack = e instanceof Error ? (e.stack ?? '') : '';
    return this.deadLetterRecord(f.errorCode, message, stack, f.attempts, f.stage, e instanceof RecordTooLargeError);
  }

  /** Dead-letters the current input without failing it (toDeadLetter, late records). */
  routeToDeadLetter(code: string, message: string, stage: string): void {
    this.out.push(this.deadLetterRecord(code, message, '', 1, stage));
  }
}

/** A stage that acts when stream time advances (windows closing, join sides expiring). */
export interface StreamTimeListener {
  fireStreamTime(): Step;
}

/** A stage call that failed and may be tried again (RuntimeNode.attempt). */
export interface RetriedStage {
  readonly name: string;
  attempt(key: unknown, value: unknown, attempt: number): Step;
}

/** An aggregate that holds back its results (a record cache is configured) until its task releases them. */
export interface CachingNode {
  readonly cache: RecordCache | undefined;
  /** Sends a held-back result downstream; the task has made its input record the current one. */
  release(result: CachedResult): Step;
}

/** A processor stage as its task drives it (nodes/process.ts). */
export interface PunctuatingNode {
  readonly punctuatesOnWallClock: boolean;
  wallClockDue(now: number): boolean;
  punctuateWallClock(now: number): Step;
  endRecord(ok: boolean): void;
  commit(): void;
  rollback(): void;
}

