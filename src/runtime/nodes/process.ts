// Processor stages (Kafka Streams' Processor API) and their punctuations. Stream-time punctuations run
// while a record moves stream time across a multiple of their interval, inside that record's run;
// wall-clock ones run when the worker (or the test driver) finds them due. Both write to the open
// transaction, so their outputs and store writes commit or abort with it.
import type { ProcessorContext, ProcessorStore, PunctuationSpec } from '../../dsl/processor.ts';
import type { CompiledNode, CompiledStore } from '../../graph/types.ts';
import type { SerdeContext } from '../../serdes/serde.ts';
import type { TransactionalStore } from '../../state/transactional.ts';
import { ProcessorWithoutStoreError, StageFailure } from './node-errors.ts';
import { type TaskState } from './task-state.ts';
import type { NodeFactories } from './node-factory.ts';
import { errorCode } from '../../core/stage-errors.ts';
import { RuntimeNode, type Spec } from './runtime-node.ts';
import type { Step } from './step.ts';

type AnyProcessorContext = ProcessorContext<unknown, unknown, unknown, unknown>;

/** The boundaries a punctuation last ran at: as of now, of the last record that succeeded, of the last commit. */
class Schedule {
  last: number;
  #recordStart: number;
  #committed: number;
  constructor(
    readonly punctuation: PunctuationSpec,
    start: number,
  ) {
    this.last = this.#recordStart = this.#committed = start;
  }
  boundary(time: number): number {
    return Math.floor(time / this.punctuation.everyMs) * this.punctuation.everyMs;
  }
  endRecord(ok: boolean): void {
    if (ok) this.#recordStart = this.last;
    else this.last = this.#recordStart;
  }
  commit(): void {
    this.#committed = this.#recordStart = this.last;
  }
  rollback(): void {
    this.last = this.#recordStart = this.#committed;
  }
}

export class ProcessNode extends RuntimeNode {
  readonly #spec = this.node.spec as Spec<'process'>;
  readonly #stream: Schedule[];
  readonly #wall: Schedule[];
  #forwarded: [unknown, unknown][] = [];
  /** `timestamp` a punctuation sees: its boundary; undefined while a record is processed. */
  #punctuationTime: number | undefined;
  readonly #context: AnyProcessorContext;

  constructor(task: TaskState, node: CompiledNode, state: { store: TransactionalStore; spec: CompiledStore } | undefined) {
    super(task, node);
    const punctuations = this.#spec.punctuations;
    // Stream-time boundaries count from the stream time the task resumes at: replayed records cross the same ones again.
    const streamStart = (p: PunctuationSpec): number => (Number.isFinite(task.streamTime) ? Math.floor(task.streamTime / p.everyMs) * p.everyMs : Number.NEGATIVE_INFINITY);
    this.#stream = punctuations.filter((p) => p.on === 'stream-time').map((p) => new Schedule(p, streamStart(p)));
    const now = task.env.now();
    this.#wall = punctuations.filter((p) => p.on === 'wall-clock').map((p) => new Schedule(p, Math.floor(now / p.everyMs) * p.everyMs));
    const self = this;
    const store = state ? storeView(state.store, state.spec, task) : undefined;
    this.#context = {
      forward: (key, value) => void this.#forwarded.push([key, value]),
      get store(): ProcessorStore<unknown, unknown> {
        if (store === undefined) throw new ProcessorWithoutStoreError(self.name);
        return store;
      },
      get streamTime() {
        return task.streamTime;
      },
      get timestamp() {
        return self.#punctuationTime ?? task.timestamp;
      },
      partition: task.partition,
    };
  }

  get punctuatesOnWallClock(): boolean {
    return this.#wall.length > 0;
  }

  get punctuatesOnStreamTime(): boolean {
    return this.#stream.length > 0;
  }

  protected apply(key: unknown, value: unknown): Step {
    this.#forwarded = [];
    this.checkSync(this.#spec.fn(key, value, this.#context));
    return this.#flush();
  }

  #flush(): Step {
    const out = this.#forwarded;
    this.#forwarded = [];
    return out.length === 0 ? undefined : this.forwardPairs(out, 0);
  }

  /** Runs the punctuations of `schedules` whose next boundary `time` has reached: once each, however many boundaries it crossed. */
  #runDue(schedules: readonly Schedule[], time: number): Step {
    this.#forwarded = [];
    try {
      for (const s of schedules) {
        const boundary = s.boundary(time);
        if (s.last === Number.NEGATIVE_INFINITY) s.last = boundary;
        if (!(boundary > s.last)) continue;
        s.last = boundary;
        this.#punctuationTime = boundary;
        this.checkSync(s.punctuation.run(boundary, this.#context));
      }
    } catch (e) {
      this.#forwarded = [];
      throw new StageFailure(this.name, e, 1, errorCode(e, 'PUNCTUATION_FAILED'));
    } finally {
      this.#punctuationTime = undefined;
    }
    return this.#flush();
  }

  override fireStreamTime(): Step {
    return this.#runDue(this.#stream, this.task.streamTime);
  }

  /** Whether a wall-clock punctuation is due at `now`. */
  wallClockDue(now: number): boolean {
    return this.#wall.some((s) => s.boundary(now) > s.last);
  }

  punctuateWallClock(now: number): Step {
    return this.#runDue(this.#wall, now);
  }

  endRecord(ok: boolean): void {
    for (const s of this.#stream) s.endRecord(ok);
    for (const s of this.#wall) s.endRecord(ok);
  }

  commit(): void {
    for (const s of this.#stream) s.commit();
    for (const s of this.#wall) s.commit();
  }

  rollback(): void {
    for (const s of this.#stream) s.rollback();
    for (const s of this.#wall) s.rollback();
  }
}

/** The processor's store, in decoded keys and values. */
function storeView(store: TransactionalStore, spec: CompiledStore, task: TaskState): ProcessorStore<unknown, unknown> {
  const keyCtx: SerdeContext = { topic: spec.changelogTopic, role: 'key' };
  const valueCtx: SerdeContext = { topic: spec.changelogTopic, role: 'value' };
  const keyBytes = (key: unknown): Buffer => spec.keySerde.serialize(key, keyCtx) ?? Buffer.alloc(0);
  return {
    get(key) {
      const v = store.get(keyBytes(key));
      return v === undefined ? undefined : spec.valueSerde.deserialize(v, valueCtx);
    },
    put(key, value) {
      const v = spec.valueSerde.serialize(value, valueCtx);
      if (v === null) store.delete(keyBytes(key), task.timestamp);
      else store.put(keyBytes(key), v, task.timestamp);
    },
    delete(key) {
      store.delete(keyBytes(key), task.timestamp);
    },
    entries() {
      return [...store.entries()].map(([k, v]) => [spec.keySerde.deserialize(k, keyCtx), spec.valueSerde.deserialize(v, valueCtx)]);
    },
  };
}

export const PROCESS_NODES = {
  process: ({ task, node, storeOf }) => {
    const n = new ProcessNode(task, node, node.stores[0] === undefined ? undefined : storeOf(node.stores[0]));
    if (n.punctuatesOnStreamTime) task.timeListeners.push(n);
    task.punctuating.push(n);
    return n;
  },
} satisfies NodeFactories;
