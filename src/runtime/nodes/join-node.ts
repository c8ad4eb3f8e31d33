// What every join inside a task shares. Each side of a join is a JoinInput the parent forwards to, so
// the join knows which input a record came from; a join's results go on from the join itself.
import type { CompiledNode } from '../../graph/types.ts';
import type { TaskState } from './task-state.ts';
import { RuntimeNode, type Spec } from './runtime-node.ts';
import type { Step } from './step.ts';

type SideHandler = (key: unknown, value: unknown) => Step;

/** One input of a join: runs with the join's name (its errors and retries are the join's). */
class JoinInput extends RuntimeNode {
  constructor(
    task: TaskState,
    node: CompiledNode,
    private readonly handle: SideHandler,
  ) {
    super(task, node);
  }

  protected apply(key: unknown, value: unknown): Step {
    return this.handle(key, value);
  }
}

export abstract class JoinNode extends RuntimeNode {
  /** Per parent, its inputs in order: a self-join (`stream.join(stream, ...)`) has one parent on both sides. */
  readonly #inputs = new Map<string, JoinInput[]>();

  /** Parent names in order (the compiled node's): index 0 is the left side. */
  protected constructor(task: TaskState, node: CompiledNode, handlers: readonly SideHandler[]) {
    super(task, node);
    node.parents.forEach((parent, i) => {
      const input = new JoinInput(task, node, handlers[i]!);
      this.#inputs.set(parent, [...(this.#inputs.get(parent) ?? []), input]);
    });
  }

  /**
   * The inputs' handlers forward through the join itself, to its children. A self-join's parent lists
   * the join twice among its children, left side first, so each record joins as the left side (with
   * the earlier records) and then as the right side (with the earlier ones and itself), which gives
   * Kafka Streams' self-join results: every ordered pair within the window, each record with itself.
   */
  override inputFrom(parent: string, occurrence: number): RuntimeNode {
    return this.#inputs.get(parent)![occurrence]!;
  }

  /** A join stage is only reached through its inputs. */
  protected apply(): Step {}

  /** A stream record found no row: visible per join, since an inner join drops it without a trace. */
  protected countMiss(): void {
    const misses = this.task.joinMisses;
    misses.set(this.name, (misses.get(this.name) ?? 0) + 1);
  }

  protected join(key: unknown, value: unknown, other: unknown): unknown {
    return this.checkSync((this.node.spec as Spec<'streamTableJoin' | 'tableTableJoin' | 'streamStreamJoin' | 'globalTableJoin'>).joiner(key, value, other));
  }

  /** Each result carries its own timestamp; the record being processed gets its own back after. */
  protected emitEach(results: readonly { key: unknown; value: unknown; timestamp: number }[], from: number): Step {
    const task = this.task;
    const timestamp = task.timestamp;
    for (let i = from; i < results.length; i++) {
      const r = results[i]!;
      task.timestamp = r.timestamp;
      const step = this.forward(r.key, r.value);
      task.timestamp = timestamp;
      if (step !== undefined) {
        return step.then(() => this.emitEach(results, i + 1));
      }
    }
  }
}
