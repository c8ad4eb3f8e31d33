// Cogrouped aggregates (Kafka Streams' CogroupedKStream, KIP-150): several grouped streams fold into
// one store, each through its own aggregator. Each input is an aggregate node of its own over that
// store (the stage's store, so written in the transaction like any aggregate's), and all of them
// forward through the cogroup stage to its children.
import type { CompiledNode, CompiledStore } from '../../graph/types.ts';
import type { TransactionalStore } from '../../state/transactional.ts';
import type { NodeFactories } from './node-factory.ts';
import type { RecordCache } from './record-cache.ts';
import { RuntimeNode, type Spec } from './runtime-node.ts';
import { AggregateNode, WindowedAggregateNode } from './stateful.ts';
import type { TaskState } from './task-state.ts';
import type { Step } from './step.ts';

/** Where every input's results go: on to the cogroup stage's children. */
class CogroupOutput extends RuntimeNode {
  constructor(
    task: TaskState,
    node: CompiledNode,
    private readonly owner: CogroupNode,
  ) {
    super(task, node);
  }

  protected apply(key: unknown, value: unknown): Step {
    return this.owner.emit(key, value);
  }
}

export class CogroupNode extends RuntimeNode {
  /** By parent name: the compiled node's parents are in the order of the aggregators. */
  readonly #inputs = new Map<string, AggregateNode | WindowedAggregateNode>();

  constructor(task: TaskState, node: CompiledNode, store: TransactionalStore, storeSpec: CompiledStore) {
    super(task, node);
    const spec = node.spec as Spec<'cogroup'>;
    const output = new CogroupOutput(task, node, this);
    // One record cache for all inputs: a key's latest update, whichever input made it, is the one released.
    let cache: RecordCache | undefined;
    node.parents.forEach((parent, i) => {
      const aggregation = { init: spec.init, fn: spec.aggregators[i]! };
      const input = storeSpec.window ? new WindowedAggregateNode(task, node, store, storeSpec, aggregation) : new AggregateNode(task, node, store, storeSpec, aggregation, cache);
      if (input instanceof AggregateNode) cache ??= input.cache;
      input.children = [output];
      this.#inputs.set(parent, input);
    });
  }

  get inputs(): readonly (AggregateNode | WindowedAggregateNode)[] {
    return [...this.#inputs.values()];
  }

  emit(key: unknown, value: unknown): Step {
    return this.forward(key, value);
  }

  override inputFrom(parent: string): RuntimeNode {
    return this.#inputs.get(parent)!;
  }

  /** Only reached through its inputs. */
  protected apply(): Step {}

  override reset(): void {
    for (const input of this.#inputs.values()) input.reset();
  }
}

export const COGROUP_NODES = {
  cogroup: ({ task, node, storeOf }) => {
    const s = storeOf(node.stores[0]!);
    const n = new CogroupNode(task, node, s.store, s.spec);
    const [first] = n.inputs;
    for (const input of n.inputs) if (input instanceof WindowedAggregateNode) task.timeListeners.push(input);
    // The inputs share the first one's cache: it alone is released by the task.
    if (first instanceof AggregateNode && first.cache) task.caching.push(first);
    return n;
  },
} satisfies NodeFactories;
