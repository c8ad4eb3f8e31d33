// Builds a task's stage of each compiled node; the stages themselves live in nodes/stateless.ts
// and nodes/stateful.ts, their shared context in task-context.ts.
import type { CompiledNode, CompiledStore } from '../../graph/types.ts';
import type { TransactionalStore } from '../../state/transactional.ts';
import { RuntimeNode, TaskContext } from '../task/task-context.ts';
import { BranchNode, DeadLetterNode, EffectNode, FilterNode, FlatMapNode, FlatMapValuesNode, MapNode, MapValuesNode, PassThroughNode, PeekNode, SelectKeyNode, SetHeadersNode, SinkNode, SourceNode } from './stateless.ts';
import { AggregateNode, DedupeNode, LatestByVersionNode, WindowedAggregateNode } from './stateful.ts';
import { rowsOf, TableFilterNode, TableMapValuesNode, ToTableNode } from './tables.ts';
import { GlobalTableJoinNode, StreamStreamJoinNode, StreamTableJoinNode, TableTableJoinNode } from './joins.ts';
import { UnknownGlobalTableError } from '../task/task-errors.ts';
import { SessionAggregateNode } from './sessions.ts';
import { SuppressNode } from './suppress.ts';
import { ProcessNode } from './process.ts';
export { TaskContext, type CachingNode, type RuntimeNode, type Step, type TaskEnvironment, type TaskMetrics } from '../task/task-context.ts';
export type { SourceNode } from './stateless.ts';
export type { AggregateNode } from './stateful.ts';
export type { ProcessNode } from './process.ts';

type StoreOf = (name: string) => { store: TransactionalStore; spec: CompiledStore };

/** `nodeOf`: an already created node of the task (a table a join reads); nodes are created parents first. */
export function createRuntimeNode(ctx: TaskContext, node: CompiledNode, storeOf: StoreOf, nodeOf: (name: string) => RuntimeNode): RuntimeNode {
  const tableInput = (i: number) => rowsOf(nodeOf(node.tableInputs![i]!), storeOf);
  switch (node.kind) {
    case 'toTable': {
      const s = storeOf(node.stores[0]!);
      return new ToTableNode(ctx, node, s.store, s.spec);
    }
    case 'tableFilter':
      return new TableFilterNode(ctx, node, tableInput(0));
    case 'tableMapValues':
      return new TableMapValuesNode(ctx, node, tableInput(0));
    case 'streamTableJoin':
      return new StreamTableJoinNode(ctx, node, tableInput(0));
    case 'tableTableJoin':
      return new TableTableJoinNode(ctx, node, tableInput(0), tableInput(1));
    case 'streamStreamJoin': {
      const n = new StreamStreamJoinNode(ctx, node, [storeOf(node.stores[0]!), storeOf(node.stores[1]!)]);
      ctx.timeListeners.push(n);
      return n;
    }
    case 'globalTableJoin': {
      const rows = ctx.env.globalRows?.(node.globalStore!);
      if (rows === undefined) throw new UnknownGlobalTableError(node.name, node.globalStore!);
      return new GlobalTableJoinNode(ctx, node, rows);
    }
    case 'globalTable':
      // never part of a sub-topology: compile keeps global tables out of the tasks
      throw new UnknownGlobalTableError(node.name, node.name);
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
    case 'setHeaders':
      return new SetHeadersNode(ctx, node);
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
    case 'suppress': {
      const s = storeOf(node.stores[0]!);
      const n = new SuppressNode(ctx, node, s.store, s.spec);
      ctx.timeListeners.push(n);
      return n;
    }
    case 'process': {
      const n = new ProcessNode(ctx, node, node.stores[0] === undefined ? undefined : storeOf(node.stores[0]));
      if (n.punctuatesOnStreamTime) ctx.timeListeners.push(n);
      ctx.punctuating.push(n);
      return n;
    }
    case 'aggregate': {
      const s = storeOf(node.stores[0]!);
      if (s.spec.session) {
        const n = new SessionAggregateNode(ctx, node, s.store, s.spec);
        ctx.timeListeners.push(n);
        return n;
      }
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

