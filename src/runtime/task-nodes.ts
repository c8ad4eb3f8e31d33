// Builds a task's stage of each compiled node; the stages themselves live in stateless-nodes.ts
// and stateful-nodes.ts, their shared context in task-context.ts.
import type { CompiledNode, CompiledStore } from '../graph/types.ts';
import type { TransactionalStore } from '../state/transactional.ts';
import { RuntimeNode, TaskContext } from './task-context.ts';
import { BranchNode, DeadLetterNode, EffectNode, FilterNode, FlatMapNode, FlatMapValuesNode, MapNode, MapValuesNode, PassThroughNode, PeekNode, SelectKeyNode, SinkNode, SourceNode } from './stateless-nodes.ts';
import { AggregateNode, DedupeNode, LatestByVersionNode, WindowedAggregateNode } from './stateful-nodes.ts';
export { TaskContext, type CachingNode, type RuntimeNode, type Step, type TaskEnvironment, type TaskMetrics } from './task-context.ts';
export type { SourceNode } from './stateless-nodes.ts';
export type { AggregateNode } from './stateful-nodes.ts';

export function createRuntimeNode(ctx: TaskContext, node: CompiledNode, storeOf: (name: string) => { store: TransactionalStore; spec: CompiledStore }): RuntimeNode {
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

