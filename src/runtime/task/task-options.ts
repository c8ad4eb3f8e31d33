import { RecordSizeLimits } from '../../core/record-size.ts';
import type { TaskPlan } from '../../graph/types.ts';
import type { StoreFactory } from '../../state/store.ts';
import { CacheBudget } from '../nodes/record-cache.ts';
import type { RecordCacheOptions, TaskEnvironment } from '../nodes/task-state.ts';

/** What the worker or the test driver decides for a task; every field has a default. */
export interface TaskOptions {
  /** Committed storage per store; defaults to in-memory maps. */
  readonly storeFactory?: StoreFactory;
  /** What a record the task emits (outputs, repartition, changelog records, dead letters) may carry; default: librdkafka's message.max.bytes for every topic. */
  readonly recordLimits?: RecordSizeLimits;
  /** Wall clock for the `onceflow.error.time` header. */
  readonly now?: () => number;
  /** How retry backoff waits; tests may pass a fake. */
  readonly sleep?: (ms: number) => Promise<void>;
  /** Jitter source in [0, 1). */
  readonly random?: () => number;
  /**
   * Stream time to resume from (e.g. kept in the offset-commit metadata by the worker), so that
   * window closing and dedupe expiry replay the same way after a restart.
   */
  readonly initialStreamTime?: number;
  /**
   * The record cache: key-value aggregates hold back their latest result per key until the commit,
   * within `budget` (shared by the worker's tasks) and `maxRecords` keys per aggregate. Default: none.
   */
  readonly cache?: { readonly budget?: CacheBudget; readonly maxRecords?: number } | undefined;
  /** The global tables' rows, by store name, for global-table joins (the worker's or the test driver's). */
  readonly globalRows?: (store: string) => { row(key: unknown): unknown } | undefined;
  /** Told of each record a windowed aggregate drops as too late. */
  readonly onLateRecord?: TaskEnvironment['onLateRecord'];
  /** The worker's tracer; default none. */
  readonly tracer?: TaskEnvironment['tracer'];
}

const realSleep = (ms: number): Promise<void> => new Promise((resolve) => setTimeout(resolve, ms));

/** The environment a task's stages share, from the plan and the options' defaults. */
export function taskEnvironment(plan: TaskPlan, opts: TaskOptions): TaskEnvironment {
  return {
    retryPolicyFor: (n) => plan.retryPolicyFor(n),
    unknownErrors: plan.unknownErrors,
    deadLetterTopic: plan.deadLetterTopic,
    now: opts.now ?? Date.now,
    sleep: opts.sleep ?? realSleep,
    random: opts.random ?? Math.random,
    cache: recordCacheOptions(opts.cache),
    recordLimits: opts.recordLimits ?? new RecordSizeLimits(),
    ...(opts.globalRows ? { globalRows: opts.globalRows } : {}),
    onLateRecord: opts.onLateRecord,
    tracer: opts.tracer ?? null,
  };
}

/** No cache at all, or one within a byte budget (unbounded when not given) and a key count per aggregate. */
function recordCacheOptions(cache: TaskOptions['cache']): RecordCacheOptions | undefined {
  if (cache === undefined || cache.maxRecords === 0 || cache.budget?.maxBytes === 0) return undefined;
  return { budget: cache.budget ?? new CacheBudget(Number.POSITIVE_INFINITY), maxRecords: cache.maxRecords ?? Number.POSITIVE_INFINITY };
}
