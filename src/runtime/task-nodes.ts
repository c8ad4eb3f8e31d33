import { OnceflowError } from '../errors.ts';
import type { Serde, SerdeContext } from '../serdes/serde.ts';
import type { StageSpec } from '../dsl/nodes.ts';
import type { EffectContext, RetryPolicy, WindowSpec, Windowed } from '../dsl/types.ts';
import type { CompiledNode, CompiledStore } from '../graph/types.ts';
import type { IncomingRecord, OutgoingRecord, RecordHeader } from '../core/records.ts';
import type { TransactionalStore } from '../state/transactional.ts';
import { DeadlineHeap } from '../state/heap.ts';
import { mapKey } from '../state/store.ts';
import { RecordCache, type CachedResult } from './record-cache.ts';
import { splitWindowStoreKey, windowStartsFor, windowStoreKey } from '../state/windowed.ts';
import { PermanentError, RetriableError } from '../core/stage-errors.ts';
import { AsyncStageResultError, StageFailure } from './task-errors.ts';
import { checkRecordSize } from '../core/record-size.ts';
import { DEAD_LETTER } from '../core/headers.ts';

/** void on the synchronous fast path; a Promise only when something async is involved. */
export type Step = void | Promise<void>;

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
  /** Keys each key-value aggregate holds back until the commit (0: every update goes downstream). */
  readonly cacheMaxRecords: number;
  /** Largest key + value + headers of one produced record (see core/record-size.ts). */
  readonly maxRecordBytes: number;
}

const MAX_STACK = 8192;

/** Errors that say of themselves that a later try may succeed (the registry being down). */
function isTransient(e: unknown): boolean {
  return typeof e === 'object' && e !== null && (e as { retriable?: unknown }).retriable === true;
}

function header(key: string, value: string): RecordHeader {
  return { key, value: Buffer.from(value, 'utf8') };
}

function isThenable(x: unknown): x is PromiseLike<unknown> {
  return x !== null && (typeof x === 'object' || typeof x === 'function') && typeof (x as { then?: unknown }).then === 'function';
}

function errorCode(e: unknown, fallback: string): string {
  const code = (e as { code?: unknown } | null)?.code;
  return typeof code === 'string' && code.length > 0 ? code : fallback;
}

/**
 * The mutable per-task state the nodes share. One record is in flight at a time, so the current
 * record lives here instead of being passed (and allocated) per call.
 */
export class TaskContext {
  current!: IncomingRecord;
  /** Event time of the current record. */
  timestamp = 0;
  streamTime = Number.NEGATIVE_INFINITY;
  /** Increments per input record; effect stages use it to number fan-out within one record. */
  seq = 0;
  busy = false;
  /** Everything the current record emits, released to the collector only if the record succeeds. */
  readonly out: OutgoingRecord[] = [];
  readonly metrics: TaskMetrics = { recordsProcessed: 0, deadLettered: 0, retries: 0, lateRecordsDropped: 0, duplicatesDropped: 0, staleVersionsDropped: 0, nullKeysDropped: 0 };
  readonly timeListeners: RtNode[] = [];
  /** Aggregates that hold back their results (cacheMaxRecords > 0). */
  readonly caching: AggregateNode[] = [];

  constructor(
    readonly partition: number,
    readonly env: TaskEnvironment,
  ) {}

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
  onStageError(node: RtNode, e: unknown, key: unknown, value: unknown, attempt: number): Step {
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

  /** The current input record, as it was read, with the error headers the dead-letter contract names. */
  deadLetterRecord(code: string, message: string, stack: string, attempts: number, stage: string): OutgoingRecord {
    const rec = this.current;
    return {
      topic: this.env.deadLetterTopic,
      key: rec.key,
      value: rec.value,
      timestamp: rec.timestamp,
      headers: [
        ...rec.headers,
        header(DEAD_LETTER.code, code),
        header(DEAD_LETTER.message, message),
        header(DEAD_LETTER.stack, stack.length > MAX_STACK ? stack.slice(0, MAX_STACK) : stack),
        header(DEAD_LETTER.attempts, String(attempts)),
        header(DEAD_LETTER.sourceTopic, rec.topic),
        header(DEAD_LETTER.sourcePartition, String(rec.partition)),
        header(DEAD_LETTER.sourceOffset, String(rec.offset)),
        header(DEAD_LETTER.stage, stage),
        header(DEAD_LETTER.time, String(this.env.now())),
      ],
    };
  }

  failureRecord(f: StageFailure): OutgoingRecord {
    const e = f.error;
    const message = e instanceof Error ? e.message : String(e);
    const stack = e instanceof Error ? (e.stack ?? '') : '';
    return this.deadLetterRecord(f.errorCode, message, stack, f.attempts, f.stage);
  }

  /** Dead-letters the current input without failing it (toDeadLetter, late records). */
  routeToDeadLetter(code: string, message: string, stage: string): void {
    this.out.push(this.deadLetterRecord(code, message, '', 1, stage));
  }
}

export abstract class RtNode {
  children: RtNode[] = [];

  constructor(
    readonly ctx: TaskContext,
    readonly node: CompiledNode,
  ) {}

  get name(): string {
    return this.node.name;
  }

  /** The stage's work for one record, including forwarding; `attempt` counts retries of this call. */
  protected abstract apply(key: unknown, value: unknown, attempt: number): Step;

  run(key: unknown, value: unknown): Step {
    return this.attempt(key, value, 1);
  }

  attempt(key: unknown, value: unknown, attempt: number): Step {
    let r: Step;
    try {
      r = this.apply(key, value, attempt);
    } catch (e) {
      return this.ctx.onStageError(this, e, key, value, attempt);
    }
    if (r === undefined) return;
    return r.then(undefined, (e: unknown) => this.ctx.onStageError(this, e, key, value, attempt));
  }

  protected forward(key: unknown, value: unknown): Step {
    return this.forwardFrom(0, key, value);
  }

  private forwardFrom(from: number, key: unknown, value: unknown): Step {
    const c = this.children;
    for (let i = from; i < c.length; i++) {
      const r = c[i]!.run(key, value);
      if (r !== undefined) return i + 1 === c.length ? r : r.then(() => this.forwardFrom(i + 1, key, value));
    }
  }

  protected forwardPairs(pairs: readonly (readonly [unknown, unknown])[], from: number): Step {
    for (let i = from; i < pairs.length; i++) {
      const p = pairs[i]!;
      const r = this.forward(p[0], p[1]);
      if (r !== undefined) return r.then(() => this.forwardPairs(pairs, i + 1));
    }
  }

  protected forwardValues(key: unknown, values: readonly unknown[], from: number): Step {
    for (let i = from; i < values.length; i++) {
      const r = this.forward(key, values[i]);
      if (r !== undefined) return r.then(() => this.forwardValues(key, values, i + 1));
    }
  }

  protected checkSync<T>(result: T): T {
    if (isThenable(result)) {
      // the rejected promise is nobody's to await any more
      (result as PromiseLike<unknown>).then(undefined, () => undefined);
      throw new AsyncStageResultError(this.name, this.node.kind);
    }
    return result;
  }

  /** Rebuilds in-memory indexes from the store after a rollback or a failed record. */
  reset(): void {}

  /** Called when stream time advances; only nodes registered as time listeners implement it. */
  fireStreamTime(): Step {}
}

type Spec<K extends StageSpec['kind']> = Extract<StageSpec, { kind: K }>;

export class SourceNode extends RtNode {
  readonly #keySerde: Serde<unknown>;
  readonly #valueSerde: Serde<unknown>;
  readonly #keyCtx: SerdeContext;
  readonly #valueCtx: SerdeContext;
  readonly #extract: ((v: unknown, k: unknown, ts: number) => number) | undefined;

  constructor(ctx: TaskContext, node: CompiledNode) {
    super(ctx, node);
    this.#keySerde = node.keySerde!;
    this.#valueSerde = node.valueSerde!;
    this.#keyCtx = { topic: node.topic!, role: 'key' };
    this.#valueCtx = { topic: node.topic!, role: 'value' };
    const spec = node.spec as Spec<'source'>;
    this.#extract = spec.kind === 'source' ? spec.timestamp : undefined;
  }

  protected apply(): Step {
    const rec = this.ctx.current;
    const kr = this.#keySerde.resolve?.(rec.key, this.#keyCtx) ?? null;
    const vr = this.#valueSerde.resolve?.(rec.value, this.#valueCtx) ?? null;
    if (kr === null && vr === null) return this.decode(rec);
    return Promise.all([kr, vr]).then(() => this.decode(rec));
  }

  private decode(rec: IncomingRecord): Step {
    let key: unknown;
    let value: unknown;
    try {
      key = this.#keySerde.deserialize(rec.key, this.#keyCtx);
      value = this.#valueSerde.deserialize(rec.value, this.#valueCtx);
    } catch (e) {
      if (e instanceof RetriableError || isTransient(e)) throw e;
      // A serde's own code (WIRE_MAGIC_BYTE, JSON_INVALID, ...) says more than a generic one.
      throw new StageFailure(this.name, e, 1, e instanceof OnceflowError ? e.code : 'DESERIALIZATION_FAILED');
    }
    let ts = rec.timestamp;
    if (this.#extract) {
      try {
        ts = this.#extract(value, key, rec.timestamp);
      } catch (e) {
        throw new StageFailure(this.name, e, 1, 'TIMESTAMP_EXTRACTION_FAILED');
      }
    }
    const r = this.ctx.observe(ts);
    if (r === undefined) return this.forward(key, value);
    return r.then(() => this.forward(key, value));
  }
}

class FilterNode extends RtNode {
  readonly #spec = this.node.spec as Spec<'filter'>;
  protected apply(key: unknown, value: unknown): Step {
    const keep = this.checkSync(this.#spec.fn(value, key));
    if (Boolean(keep) !== this.#spec.negate) return this.forward(key, value);
  }
}

class MapNode extends RtNode {
  readonly #fn = (this.node.spec as Spec<'map'>).fn;
  protected apply(key: unknown, value: unknown): Step {
    const kv = this.checkSync(this.#fn(key, value)) as readonly [unknown, unknown];
    return this.forward(kv[0], kv[1]);
  }
}

class MapValuesNode extends RtNode {
  readonly #fn = (this.node.spec as Spec<'mapValues'>).fn;
  protected apply(key: unknown, value: unknown): Step {
    return this.forward(key, this.checkSync(this.#fn(value, key)));
  }
}

class SelectKeyNode extends RtNode {
  readonly #fn = (this.node.spec as Spec<'selectKey' | 'groupBy'>).fn;
  protected apply(key: unknown, value: unknown): Step {
    return this.forward(this.checkSync(this.#fn(key, value)), value);
  }
}

class FlatMapNode extends RtNode {
  readonly #fn = (this.node.spec as Spec<'flatMap'>).fn;
  protected apply(key: unknown, value: unknown): Step {
    const it = this.checkSync(this.#fn(key, value)) as Iterable<readonly [unknown, unknown]>;
    return this.forwardPairs(Array.isArray(it) ? it : [...it], 0);
  }
}

class FlatMapValuesNode extends RtNode {
  readonly #fn = (this.node.spec as Spec<'flatMapValues'>).fn;
  protected apply(key: unknown, value: unknown): Step {
    const it = this.checkSync(this.#fn(value, key)) as Iterable<unknown>;
    return this.forwardValues(key, Array.isArray(it) ? it : [...it], 0);
  }
}

class PassThroughNode extends RtNode {
  protected apply(key: unknown, value: unknown): Step {
    return this.forward(key, value);
  }
}

class PeekNode extends RtNode {
  readonly #fn = (this.node.spec as Spec<'peek'>).fn;
  protected apply(key: unknown, value: unknown): Step {
    this.checkSync(this.#fn(value, key));
    return this.forward(key, value);
  }
}

class BranchNode extends RtNode {
  readonly #branches = (this.node.spec as Spec<'branch'>).branches;
  /** children in branch order (the compiler creates one branchChild per branch, in order). */
  protected apply(key: unknown, value: unknown): Step {
    const bs = this.#branches;
    for (let i = 0; i < bs.length; i++) {
      if (this.checkSync(bs[i]!.fn(value, key))) return this.children[i]!.run(key, value);
    }
  }
}

class SinkNode extends RtNode {
  readonly #topic = this.node.topic!;
  readonly #keySerde = this.node.keySerde!;
  readonly #valueSerde = this.node.valueSerde!;
  readonly #keyCtx: SerdeContext = { topic: this.#topic, role: 'key' };
  readonly #valueCtx: SerdeContext = { topic: this.#topic, role: 'value' };
  protected apply(key: unknown, value: unknown): Step {
    const k = this.#keySerde.serialize(key, this.#keyCtx);
    const v = this.#valueSerde.serialize(value, this.#valueCtx);
    const headers = this.ctx.current.headers;
    checkRecordSize(this.#topic, k, v, headers, this.ctx.env.maxRecordBytes);
    this.ctx.out.push(headers.length > 0 ? { topic: this.#topic, key: k, value: v, timestamp: this.ctx.timestamp, headers } : { topic: this.#topic, key: k, value: v, timestamp: this.ctx.timestamp });
  }
}

class DeadLetterNode extends RtNode {
  readonly #reason = (this.node.spec as Spec<'deadLetter'>).reason ?? 'routed to the dead-letter topic by toDeadLetter';
  protected apply(): Step {
    this.ctx.routeToDeadLetter('ROUTED_TO_DEAD_LETTER', this.#reason, this.name);
  }
}

class EffectNode extends RtNode {
  readonly #spec = this.node.spec as Spec<'effect'>;
  #seq = -1;
  #fanout = 0;
  protected apply(key: unknown, value: unknown, attempt: number): Step {
    const rec = this.ctx.current;
    if (attempt === 1) {
      if (this.#seq === this.ctx.seq) this.#fanout++;
      else {
        this.#seq = this.ctx.seq;
        this.#fanout = 0;
      }
    }
    let idempotencyKey: string;
    if (this.#spec.idempotencyKey) idempotencyKey = String(this.#spec.idempotencyKey(value, key));
    else {
      // a record that fans out reaches the effect several times; number the calls so keys stay distinct and stable
      idempotencyKey = `${rec.topic}-${rec.partition}-${rec.offset}`;
      if (this.#fanout > 0) idempotencyKey += `#${this.#fanout}`;
    }
    const ectx: EffectContext<unknown> = { idempotencyKey, key, topic: rec.topic, partition: rec.partition, offset: rec.offset, timestamp: this.ctx.timestamp, attempt };
    const p = this.#spec.fn(value, ectx);
    if (!isThenable(p)) return this.forward(key, value);
    return Promise.resolve(p).then(() => this.forward(key, value));
  }
}

abstract class StatefulNode extends RtNode {
  readonly store: TransactionalStore;
  readonly storeSpec: CompiledStore;
  readonly keyCtx: SerdeContext;
  readonly valueCtx: SerdeContext;

  constructor(ctx: TaskContext, node: CompiledNode, store: TransactionalStore, storeSpec: CompiledStore) {
    super(ctx, node);
    this.store = store;
    this.storeSpec = storeSpec;
    this.keyCtx = { topic: storeSpec.changelogTopic, role: 'key' };
    this.valueCtx = { topic: storeSpec.changelogTopic, role: 'value' };
  }

  protected keyBytes(key: unknown): Buffer {
    return this.storeSpec.keySerde.serialize(key, this.keyCtx) ?? Buffer.alloc(0);
  }
}

class DedupeNode extends StatefulNode {
  readonly #spec = this.node.spec as Spec<'dedupe'>;
  readonly #heap = new DeadlineHeap<Buffer>();
  #indexed = false;

  override reset(): void {
    this.#indexed = false;
  }

  #firstSeen(bytes: Buffer): number {
    return Number(bytes.toString('utf8'));
  }

  #expire(): void {
    const ttl = this.#spec.ttlMs;
    const now = this.ctx.streamTime;
    if (!this.#indexed) {
      this.#heap.clear();
      for (const [k, v] of this.store.entries()) this.#heap.push(this.#firstSeen(v) + ttl, k);
      this.#indexed = true;
    }
    for (let e = this.#heap.popDue(now); e !== undefined; e = this.#heap.popDue(now)) {
      const cur = this.store.get(e.item);
      // the id may have been seen again (re-put) since this deadline was queued
      if (cur !== undefined && this.#firstSeen(cur) + ttl <= now) this.store.delete(e.item, now);
    }
  }

  protected apply(key: unknown, value: unknown): Step {
    const id = String(this.checkSync(this.#spec.fn(value, key)));
    this.#expire();
    const now = this.ctx.streamTime;
    const kb = Buffer.from(id, 'utf8');
    const seen = this.store.get(kb);
    if (seen !== undefined && this.#firstSeen(seen) + this.#spec.ttlMs > now) {
      this.ctx.metrics.duplicatesDropped++;
      return;
    }
    this.store.put(kb, Buffer.from(String(now), 'utf8'), now);
    this.#heap.push(now + this.#spec.ttlMs, kb);
    return this.forward(key, value);
  }
}

class LatestByVersionNode extends StatefulNode {
  readonly #fn = (this.node.spec as Spec<'latestByVersion'>).fn;
  protected apply(key: unknown, value: unknown): Step {
    if (key === null || key === undefined) {
      this.ctx.metrics.nullKeysDropped++;
      return;
    }
    const version = Number(this.checkSync(this.#fn(value, key)));
    const kb = this.keyBytes(key);
    const cur = this.store.get(kb);
    if (cur !== undefined && !(version > (this.storeSpec.valueSerde.deserialize(cur, this.valueCtx) as number))) {
      this.ctx.metrics.staleVersionsDropped++;
      return;
    }
    this.store.put(kb, this.storeSpec.valueSerde.serialize(version, this.valueCtx)!, this.ctx.timestamp);
    return this.forward(key, value);
  }
}

export class AggregateNode extends StatefulNode {
  readonly #spec = this.node.spec as Spec<'aggregate'>;
  readonly cache: RecordCache | undefined = this.ctx.env.cacheMaxRecords > 0 ? new RecordCache(this.ctx.env.cacheMaxRecords) : undefined;

  /** Sends a held-back result downstream; the task has made its input record the current one. */
  release(result: CachedResult): Step {
    return this.forward(result.key, result.value);
  }

  protected apply(key: unknown, value: unknown): Step {
    if (key === null || key === undefined) {
      this.ctx.metrics.nullKeysDropped++;
      return;
    }
    const serde = this.storeSpec.valueSerde;
    const kb = this.keyBytes(key);
    const cur = this.store.get(kb);
    const agg = cur === undefined ? this.#spec.init() : serde.deserialize(cur, this.valueCtx);
    const next = this.checkSync(this.#spec.fn(key, value, agg));
    const bytes = serde.serialize(next, this.valueCtx);
    if (bytes === null) this.store.delete(kb, this.ctx.timestamp);
    else this.store.put(kb, bytes, this.ctx.timestamp);
    if (this.cache === undefined) return this.forward(key, next);
    this.cache.put(mapKey(kb), { key, value: next, record: this.ctx.current, timestamp: this.ctx.timestamp });
  }
}

class WindowedAggregateNode extends StatefulNode {
  readonly #spec = this.node.spec as Spec<'aggregate'>;
  readonly #w: WindowSpec = (this.node.spec as Spec<'aggregate'>).window!;
  readonly #heap = new DeadlineHeap<Buffer>();
  readonly #starts: number[] = [];
  #indexed = false;

  override reset(): void {
    this.#indexed = false;
  }

  #index(): void {
    if (this.#indexed) return;
    this.#heap.clear();
    for (const [k] of this.store.entries()) this.#heap.push(splitWindowStoreKey(k).start + this.#w.sizeMs + this.#w.graceMs, k);
    this.#indexed = true;
  }

  protected apply(key: unknown, value: unknown): Step {
    if (key === null || key === undefined) {
      this.ctx.metrics.nullKeysDropped++;
      return;
    }
    this.#index();
    const { sizeMs, graceMs, advanceMs } = this.#w;
    const starts = windowStartsFor(this.ctx.timestamp, sizeMs, advanceMs, this.#starts);
    const serde = this.storeSpec.valueSerde;
    const kb = this.keyBytes(key);
    const now = this.ctx.streamTime;
    // compute every window first, so a throwing aggregator leaves nothing half-written for the retry
    const updates: { sk: Buffer; start: number; fresh: boolean; next: unknown }[] = [];
    for (const start of starts) {
      if (start + sizeMs + graceMs <= now) continue;
      const sk = windowStoreKey(kb, start);
      const cur = this.store.get(sk);
      const agg = cur === undefined ? this.#spec.init() : serde.deserialize(cur, this.valueCtx);
      updates.push({ sk, start, fresh: cur === undefined, next: this.checkSync(this.#spec.fn(key, value, agg)) });
    }
    if (updates.length === 0) {
      this.ctx.metrics.lateRecordsDropped++;
      if (this.#w.lateRecords === 'dead-letter') this.ctx.routeToDeadLetter('LATE_RECORD', `record at ${this.ctx.timestamp} is later than the grace period of every window it belongs to (stream time ${now})`, this.name);
      return;
    }
    const pairs: [Windowed<unknown>, unknown][] = [];
    for (const u of updates) {
      const bytes = serde.serialize(u.next, this.valueCtx);
      if (bytes === null) this.store.delete(u.sk, this.ctx.timestamp);
      else this.store.put(u.sk, bytes, this.ctx.timestamp);
      if (u.fresh) this.#heap.push(u.start + sizeMs + graceMs, u.sk);
      if (!this.#w.emitFinal) pairs.push([{ key, start: u.start, end: u.start + sizeMs }, u.next]);
    }
    return pairs.length === 0 ? undefined : this.forwardPairs(pairs, 0);
  }

  /** Closed windows leave the store (late records can no longer change them); with emitFinal they are emitted now. */
  override fireStreamTime(): Step {
    let pairs: [Windowed<unknown>, unknown][] | undefined;
    try {
      this.#index();
      const now = this.ctx.streamTime;
      for (let e = this.#heap.popDue(now); e !== undefined; e = this.#heap.popDue(now)) {
        const cur = this.store.get(e.item);
        if (cur === undefined) continue;
        if (this.#w.emitFinal) {
          const { inner, start } = splitWindowStoreKey(e.item);
          const key = this.storeSpec.keySerde.deserialize(inner, this.keyCtx);
          (pairs ??= []).push([{ key, start, end: start + this.#w.sizeMs }, this.storeSpec.valueSerde.deserialize(cur, this.valueCtx)]);
        }
        this.store.delete(e.item, now);
      }
    } catch (e) {
      throw new StageFailure(this.name, e, 1, errorCode(e, 'WINDOW_CLOSE_FAILED'));
    }
    return pairs === undefined ? undefined : this.forwardPairs(pairs, 0);
  }
}

export function createRtNode(ctx: TaskContext, node: CompiledNode, storeOf: (name: string) => { store: TransactionalStore; spec: CompiledStore }): RtNode {
  switch (node.kind) {
    case 'source':
    case 'repartitionSource':
      return new SourceNode(ctx, node);
    case 'filter':
      return new FilterNode(ctx, node);
    case 'map':
      return new MapNode(ctx, node);
    case 'mapValues':
      return new MapValuesNode(ctx, node);
    case 'flatMap':
      return new FlatMapNode(ctx, node);
    case 'flatMapValues':
      return new FlatMapValuesNode(ctx, node);
    case 'selectKey':
    case 'groupBy':
      return new SelectKeyNode(ctx, node);
    case 'branch':
      return new BranchNode(ctx, node);
    case 'branchChild':
    case 'merge':
    case 'toStream':
      return new PassThroughNode(ctx, node);
    case 'peek':
      return new PeekNode(ctx, node);
    case 'sink':
    case 'repartitionSink':
      return new SinkNode(ctx, node);
    case 'deadLetter':
      return new DeadLetterNode(ctx, node);
    case 'effect':
      return new EffectNode(ctx, node);
    case 'dedupe': {
      const s = storeOf(node.stores[0]!);
      return new DedupeNode(ctx, node, s.store, s.spec);
    }
    case 'latestByVersion': {
      const s = storeOf(node.stores[0]!);
      return new LatestByVersionNode(ctx, node, s.store, s.spec);
    }
    case 'aggregate': {
      const s = storeOf(node.stores[0]!);
      if (s.spec.window) {
        const n = new WindowedAggregateNode(ctx, node, s.store, s.spec);
        ctx.timeListeners.push(n);
        return n;
      }
      const n = new AggregateNode(ctx, node, s.store, s.spec);
      if (n.cache) ctx.caching.push(n);
      return n;
    }
  }
}
