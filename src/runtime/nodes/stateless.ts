// The stages that keep no state: each turns one record into zero or more for its children.
import { OnceflowError } from '../../errors.ts';
import type { Serde, SerdeContext } from '../../serdes/serde.ts';
import type { EffectContext } from '../../dsl/types.ts';
import type { CompiledNode } from '../../graph/types.ts';
import type { IncomingRecord } from '../../core/records.ts';
import { RetriableError } from '../../core/stage-errors.ts';
import { StageFailure } from '../task/task-errors.ts';
import { checkRecordSize } from '../../core/record-size.ts';
import { toHeaderList, type HeadersUpdate } from '../../dsl/headers.ts';
import { isThenable, isTransient, RuntimeNode, type Spec, type Step, TaskContext } from '../task/task-context.ts';
import type { NodeFactories } from './node-factory.ts';

export class SourceNode extends RuntimeNode {
  readonly #keySerde: Serde<unknown>;
  readonly #valueSerde: Serde<unknown>;
  readonly #keyCtx: SerdeContext;
  readonly #valueCtx: SerdeContext;
  readonly #extract: ((v: unknown, k: unknown, ts: number) => number) | undefined;
  /** A table's source: a null value is a tombstone, not something to decode. */
  readonly #tombstones: boolean;

  constructor(ctx: TaskContext, node: CompiledNode) {
    super(ctx, node);
    this.#keySerde = node.keySerde!;
    this.#valueSerde = node.valueSerde!;
    this.#keyCtx = { topic: node.topic!, role: 'key' };
    this.#valueCtx = { topic: node.topic!, role: 'value' };
    const spec = node.spec as Spec<'source'>;
    this.#extract = spec.kind === 'source' ? spec.timestamp : undefined;
    this.#tombstones = spec.kind === 'source' && spec.table === true;
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
      value = rec.value === null && this.#tombstones ? null : this.#valueSerde.deserialize(rec.value, this.#valueCtx);
    } catch (e) {
      if (e instanceof RetriableError || isTransient(e)) throw e;
      // A serde's own code (WIRE_MAGIC_BYTE, JSON_INVALID, ...) says more than a generic one.
      throw new StageFailure(this.name, e, 1, e instanceof OnceflowError ? e.code : 'DESERIALIZATION_FAILED');
    }
    let ts = rec.timestamp;
    if (this.#extract) {
      try {
        ts = this.#extract(key, value, rec.timestamp);
      } catch (e) {
        throw new StageFailure(this.name, e, 1, 'TIMESTAMP_EXTRACTION_FAILED');
      }
    }
    const r = this.ctx.observe(ts);
    if (r === undefined) return this.forward(key, value);
    return r.then(() => this.forward(key, value));
  }
}

export class FilterNode extends RuntimeNode {
  readonly #spec = this.node.spec as Spec<'filter'>;
  protected apply(key: unknown, value: unknown): Step {
    const keep = this.checkSync(this.#spec.fn(key, value, this.ctx.record));
    if (Boolean(keep) !== this.#spec.negate) return this.forward(key, value);
  }
}

export class MapNode extends RuntimeNode {
  readonly #fn = (this.node.spec as Spec<'map'>).fn;
  protected apply(key: unknown, value: unknown): Step {
    const kv = this.checkSync(this.#fn(key, value, this.ctx.record)) as readonly [unknown, unknown];
    return this.forward(kv[0], kv[1]);
  }
}

export class MapValuesNode extends RuntimeNode {
  readonly #fn = (this.node.spec as Spec<'mapValues'>).fn;
  protected apply(key: unknown, value: unknown): Step {
    return this.forward(key, this.checkSync(this.#fn(value, this.ctx.record)));
  }
}

export class SelectKeyNode extends RuntimeNode {
  readonly #fn = (this.node.spec as Spec<'selectKey' | 'groupBy'>).fn;
  protected apply(key: unknown, value: unknown): Step {
    return this.forward(this.checkSync(this.#fn(key, value, this.ctx.record)), value);
  }
}

export class FlatMapNode extends RuntimeNode {
  readonly #fn = (this.node.spec as Spec<'flatMap'>).fn;
  protected apply(key: unknown, value: unknown): Step {
    const it = this.checkSync(this.#fn(key, value, this.ctx.record)) as Iterable<readonly [unknown, unknown]>;
    return this.forwardPairs(Array.isArray(it) ? it : [...it], 0);
  }
}

export class FlatMapValuesNode extends RuntimeNode {
  readonly #fn = (this.node.spec as Spec<'flatMapValues'>).fn;
  protected apply(key: unknown, value: unknown): Step {
    const it = this.checkSync(this.#fn(value, this.ctx.record)) as Iterable<unknown>;
    return this.forwardValues(key, Array.isArray(it) ? it : [...it], 0);
  }
}

export class PassThroughNode extends RuntimeNode {
  protected apply(key: unknown, value: unknown): Step {
    return this.forward(key, value);
  }
}

export class PeekNode extends RuntimeNode {
  readonly #fn = (this.node.spec as Spec<'peek'>).fn;
  protected apply(key: unknown, value: unknown): Step {
    this.checkSync(this.#fn(key, value, this.ctx.record));
    return this.forward(key, value);
  }
}

/** Calls its function with each record and forwards nothing: the end of a stream. */
export class ForeachNode extends RuntimeNode {
  readonly #fn = (this.node.spec as Spec<'foreach'>).fn;
  protected apply(key: unknown, value: unknown): Step {
    this.checkSync(this.#fn(key, value, this.ctx.record));
  }
}

/** Everything downstream of it, for this record, carries the headers its function returns; its siblings keep theirs. */
export class SetHeadersNode extends RuntimeNode {
  readonly #fn = (this.node.spec as Spec<'setHeaders'>).fn;
  protected apply(key: unknown, value: unknown): Step {
    const ctx = this.ctx;
    const before = ctx.headers;
    ctx.headers = toHeaderList(this.checkSync(this.#fn(key, value, ctx.record)) as HeadersUpdate);
    let r: Step;
    try {
      r = this.forward(key, value);
    } catch (e) {
      ctx.headers = before;
      throw e;
    }
    if (r === undefined) {
      ctx.headers = before;
      return;
    }
    return r.finally(() => {
      ctx.headers = before;
    });
  }
}

export class BranchNode extends RuntimeNode {
  readonly #branches = (this.node.spec as Spec<'branch'>).branches;
  /** children in branch order (the compiler creates one branchChild per branch, in order). */
  protected apply(key: unknown, value: unknown): Step {
    const bs = this.#branches;
    for (let i = 0; i < bs.length; i++) {
      if (this.checkSync(bs[i]!.fn(key, value, this.ctx.record))) return this.children[i]!.run(key, value);
    }
  }
}

export class SinkNode extends RuntimeNode {
  readonly #topic = this.node.topic!;
  readonly #keySerde = this.node.keySerde!;
  readonly #valueSerde = this.node.valueSerde!;
  readonly #keyCtx: SerdeContext = { topic: this.#topic, role: 'key' };
  readonly #valueCtx: SerdeContext = { topic: this.#topic, role: 'value' };
  protected apply(key: unknown, value: unknown): Step {
    const k = this.#keySerde.serialize(key, this.#keyCtx);
    const v = this.#valueSerde.serialize(value, this.#valueCtx);
    const headers = this.ctx.headers;
    checkRecordSize(this.#topic, k, v, headers, this.ctx.env.recordLimits);
    this.ctx.out.push(headers.length > 0 ? { topic: this.#topic, key: k, value: v, timestamp: this.ctx.timestamp, headers } : { topic: this.#topic, key: k, value: v, timestamp: this.ctx.timestamp });
  }
}

export class DeadLetterNode extends RuntimeNode {
  readonly #reason = (this.node.spec as Spec<'deadLetter'>).reason ?? 'routed to the dead-letter topic by toDeadLetter';
  protected apply(): Step {
    this.ctx.routeToDeadLetter('ROUTED_TO_DEAD_LETTER', this.#reason, this.name);
  }
}

export class EffectNode extends RuntimeNode {
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
    if (this.#spec.idempotencyKey) idempotencyKey = String(this.#spec.idempotencyKey(key, value));
    else {
      // a record that fans out reaches the effect several times; number the calls so keys stay distinct and stable
      idempotencyKey = rec.index === undefined ? `${rec.topic}-${rec.partition}-${rec.offset}` : `${rec.topic}-${rec.partition}-${rec.offset}.${rec.index}`;
      if (this.#fanout > 0) idempotencyKey += `#${this.#fanout}`;
    }
    const ectx: EffectContext<unknown> = { idempotencyKey, key, topic: rec.topic, partition: rec.partition, offset: rec.offset, timestamp: this.ctx.timestamp, attempt, headers: this.ctx.record.headers };
    const p = this.#spec.fn(key, value, ectx);
    if (!isThenable(p)) return this.forward(key, value);
    return Promise.resolve(p).then(() => this.forward(key, value));
  }
}


export const STATELESS_NODES = {
  source: ({ ctx, node }) => new SourceNode(ctx, node),
  repartitionSource: ({ ctx, node }) => new SourceNode(ctx, node),
  filter: ({ ctx, node }) => new FilterNode(ctx, node),
  map: ({ ctx, node }) => new MapNode(ctx, node),
  mapValues: ({ ctx, node }) => new MapValuesNode(ctx, node),
  flatMap: ({ ctx, node }) => new FlatMapNode(ctx, node),
  flatMapValues: ({ ctx, node }) => new FlatMapValuesNode(ctx, node),
  selectKey: ({ ctx, node }) => new SelectKeyNode(ctx, node),
  groupBy: ({ ctx, node }) => new SelectKeyNode(ctx, node),
  branch: ({ ctx, node }) => new BranchNode(ctx, node),
  branchChild: ({ ctx, node }) => new PassThroughNode(ctx, node),
  merge: ({ ctx, node }) => new PassThroughNode(ctx, node),
  toStream: ({ ctx, node }) => new PassThroughNode(ctx, node),
  peek: ({ ctx, node }) => new PeekNode(ctx, node),
  foreach: ({ ctx, node }) => new ForeachNode(ctx, node),
  setHeaders: ({ ctx, node }) => new SetHeadersNode(ctx, node),
  sink: ({ ctx, node }) => new SinkNode(ctx, node),
  repartitionSink: ({ ctx, node }) => new SinkNode(ctx, node),
  deadLetter: ({ ctx, node }) => new DeadLetterNode(ctx, node),
  effect: ({ ctx, node }) => new EffectNode(ctx, node),
} satisfies NodeFactories;
