// The base of every stage of a task: a node of the compiled topology that runs one record at a time,
// retries through its task's policy and forwards to its children. Operator families extend it (one file each).
import type { StageSpec } from '../../dsl/nodes.ts';
import type { CompiledNode } from '../../graph/types.ts';
import { AsyncStageResultError } from './node-errors.ts';
import { isThenable, type Step } from './step.ts';
import type { TaskState } from './task-state.ts';

/** The spec of one stage kind. */
export type Spec<K extends StageSpec['kind']> = Extract<StageSpec, { kind: K }>;

export abstract class RuntimeNode {
  children: RuntimeNode[] = [];

  constructor(
    readonly task: TaskState,
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
      return this.task.onStageError(this, e, key, value, attempt);
    }
    if (r === undefined) return;
    return r.then(undefined, (e: unknown) => this.task.onStageError(this, e, key, value, attempt));
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

  /**
   * The node a parent forwards to: itself, or for a join one of its sides, so that the join knows
   * which input a record came from. `occurrence`: which of the node's inputs from that parent (a
   * self-join has the same parent twice), counted from 0 in the parent's order of children.
   */
  inputFrom(_parent: string, _occurrence: number): RuntimeNode {
    return this;
  }

  /** Rebuilds in-memory indexes from the store after a rollback or a failed record. */
  reset(): void {}

  /** Called when stream time advances; only nodes registered as time listeners implement it. */
  fireStreamTime(): Step {}
}
