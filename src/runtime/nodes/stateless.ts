// The stages that keep no state: each turns one record into zero or more for its children.
import { OnceflowError } from '../../errors.ts';
import type { Serde, SerdeContext } from '../../serdes/serde.ts';
import type { EffectContext } from '../../dsl/types.ts';
import type { CompiledNode } from '../../graph/types.ts';
import type { IncomingRecord } from '../../core/records.ts';
import { isTransient } from '../../core/stage-errors.ts';
import { StageFailure } from './node-errors.ts';
import { checkRecordSize } from '../../core/record-size.ts';
import { toHeaderList, type HeadersUpdate } from '../../dsl/headers.ts';
import { TaskState } from './task-state.ts';
import type { NodeFactories } from './node-factory.ts';
import { type Step, isThenable } from './step.ts';
import { RuntimeNode, type Spec } from './runtime-node.ts';
import { callInSpan } from './effect-span.ts';

export class SourceNode extends RuntimeNode {
  readonly #keySerde: Serde<unknown>;
  readonly #valueSerde: Serde<unknown>;
  readonly #keyCtx: SerdeContext;
  readonly #valueCtx: SerdeContext;
  readonly #extract: ((v: unknown, k: unknown, ts: number) => number) | undefined;
  /** A table's source: a null value is a tombstone, not something to decode. */
  readonly #tombstones: boolean;

  constructor(task: TaskState, node: CompiledNode) {
    super(task, node);
    this.#keySerde = node.keySerde!;
    this.#valueSerde = node.valueSerde!;
    this.#keyCtx = { topic: node.topic!, role: 'key' };
    this.#valueCtx = { topic: node.topic!, role: 'value' };
    const spec = node.spec as Spec<'source'>;
    this.#extract = spec.kind === 'source' ? spec.timestamp : undefined;
    this.#tombstones = spec.kind === 'source' && spec.table === true;
  }

  protected apply(): Step {
    const rec = this.task.current;
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
      if (isTransient(e)) throw e;
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
    const r = this.task.observe(ts);
    if (r === undefined) return this.forward(key, value);
    return r.then(() => this.forward(key, value));
  }
}

export class FilterNode extends RuntimeNode {
  readonly #spec = this.node.spec as Spec<'filter'>;
  protected apply(key: unknown, value: unknown): Step {
    const keep = this.checkSync(this.#spec.fn(key, value, this.task.record));
    if (Boolean(keep) !== this.#spec.negate) return this.forward(key, value);
  }
}

export class MapNode extends RuntimeNode {
  readonly #fn = (this.node.spec as Spec<'map'>).fn;
  protected apply(key: unknown, value: unknown): Step {
    const kv = this.checkSync(this.#fn(key, value, this.task.record)) as readonly [unknown, unknown];
    return this.forward(kv[0], kv[1]);
  }
}

export class MapValuesNode extends RuntimeNode {
  readonly #fn = (this.node.spec as Spec<'mapValues'>).fn;
  protected apply(key: unknown, value: unknown): Step {
    return this.forward(key, this.checkSync(this.#fn(value, this.task.record)));
  }
}

export class SelectKeyNode extends RuntimeNode {
  readonly #fn = (this.node.spec as Spec<'selectKey' | 'groupBy'>).fn;
  protected apply(key: unknown, value: unknown): Step {
    return this.forward(this.checkSync(this.#fn(key, value, this.task.record)), value);
  }
}

export class FlatMapNode extends RuntimeNode {
  readonly #fn = (this.node.spec as Spec<'flatMap'>).fn;
  protected apply(key: unknown, value: unknown): Step {
    const it = this.checkSync(this.#fn(key, value, this.task.record)) as Iterable<readonly [unknown, unknown]>;
    return this.forwardPairs(Array.isArray(it) ? it : [...it], 0);
  }
}

export class FlatMapValuesNode extends RuntimeNode {
  readonly #fn = (this.node.spec as Spec<'flatMapValues'>).fn;
  protected apply(key: unknown, value: unknown): Step {
    const it = this.checkSync(this.#fn(value, this.task.record)) as Iterable<unknown>;
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
    this.checkSync(this.#fn(key, value, this.task.record));
    return this.forward(key, value);
  }
}

/** Calls its function with each record and forwards nothing: the end of a stream. */
export class ForeachNode extends RuntimeNode {
  readonly #fn = (this.node.spec as Spec<'foreach'>).fn;
  protected apply(key: unknown, value: unknown): Step {
    this.checkSync(this.#fn(key, value, this.task.record));
  }
}

/** Everything downstream of it, for this record, carries the headers its function returns; its siblings keep theirs. */
export class SetHeadersNode extends RuntimeNode {
  readonly #fn = (this.node.spec as Spec<'setHeaders'>).fn;
  protected apply(key: unknown, value: unknown): Step {
    const task = this.task;
    const before = task.headers;
    task.headers = toHeaderList(this.checkSync(this.#fn(key, value, task.record)) as HeadersUpdate);
    let r: Step;
    try {
      r = this.forward(key, value);
    } catch (e) {
      task.headers = before;
      throw e;
    }
    if (r === undefined) {
      task.headers = before;
      return;
    }
    return r.finally(() => {
      task.headers = before;
    });
  }
}

export class BranchNode extends RuntimeNode {
  readonly #branches = (this.node.spec as Spec<'branch'>).branches;
  /** children in branch order (the compiler creates one branchChild per branch, in order). */
  protected apply(key: unknown, value: unknown): Step {
    const bs = this.#branches;
    for (let i = 0; i < bs.length; i++) {
      if (this.checkSync(bs[i]!.fn(key, value, this.task.record))) return this.children[i]!.run(key, value);
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
    const headers = this.task.headers;
    checkRecordSize(this.#topic, k, v, headers, this.task.env.recordLimits);
    this.task.out.push(headers.length > 0 ? { topic: this.#topic, key: k, value: v, timestamp: this.task.timestamp, headers } : { topic: this.#topic, key: k, value: v, timestamp: this.task.timestamp });
  }
}

export class DeadLetterNode extends RuntimeNode {
  readonly #reason = (this.node.spec as Spec<'deadLetter'>).reason ?? 'routed to the dead-letter topic by toDeadLetter';
  protected apply(): Step {
    this.task.routeToDeadLetter('ROUTED_TO_DEAD_LETTER', this.#reason, this.name);
  }
}

export class EffectNode extends RuntimeNode {
  readonly #spec = this.node.spec as Spec<'effect'>;
  #seq = -1;
  #fanout = 0;
  protected apply(key: unknown, value: unknown, attempt: number): Step {
    const rec = this.task.current;
    if (attempt === 1) {
      if (this.#seq === this.task.seq) this.#fanout++;
      else {
        this.#seq = this.task.seq;
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
    const tracer = this.task.env.tracer;
    if (tracer !== null) {
      const span = tracer.effectStarted(this.name, rec);
      const traced: EffectContext<unknown> = { idempotencyKey, key, topic: rec.topic, partition: rec.partition, offset: rec.offset, timestamp: this.task.timestamp, attempt, headers: this.task.record.headers, traceparent: span.traceparent };
      return callInSpan(span, () => this.#spec.fn(key, value, traced), () => this.forward(key, value));
    }
    const ectx: EffectContext<unknown> = { idempotencyKey, key, topic: rec.topic, partition: rec.partition, offset: rec.offset, timestamp: this.task.timestamp, attempt, headers: this.task.record.headers, traceparent: undefined };
    const p = this.#spec.fn(key, value, ectx);
    if (!isThenable(p)) return this.forward(key, value);
    return Promise.resolve(p).then(() => this.forward(key, value));
  }
}


export const STATELESS_NODES = {
  source: ({ task, node }) => new SourceNode(task, node),
  repartitionSource: ({ task, node }) => new SourceNode(task, node),
  filter: ({ task, node }) => new FilterNode(task, node),
  map: ({ task, node }) => new MapNode(task, node),
  mapValues: ({ task, node }) => new MapValuesNode(task, node),
  flatMap: ({ task, node }) => new FlatMapNode(task, node),
  flatMapValues: ({ task, node }) => new FlatMapValuesNode(task, node),
  selectKey: ({ task, node }) => new SelectKeyNode(task, node),
  groupBy: ({ task, node }) => new SelectKeyNode(task, node),
  branch: ({ task, node }) => new BranchNode(task, node),
  branchChild: ({ task, node }) => new PassThroughNode(task, node),
  merge: ({ task, node }) => new PassThroughNode(task, node),
  toStream: ({ task, node }) => new PassThroughNode(task, node),
  peek: ({ task, node }) => new PeekNode(task, node),
  foreach: ({ task, node }) => new ForeachNode(task, node),
  setHeaders: ({ task, node }) => new SetHeadersNode(task, node),
  sink: ({ task, node }) => new SinkNode(task, node),
  repartitionSink: ({ task, node }) => new SinkNode(task, node),
  deadLetter: ({ task, node }) => new DeadLetterNode(task, node),
  effect: ({ task, node }) => new EffectNode(task, node),
} satisfies NodeFactories;
