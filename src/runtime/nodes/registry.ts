// Builds a task's stage of each compiled node. The engine knows nodes, not operators: each operator
// family lists the kinds it builds beside its node classes, and this merges the lists. A kind with no
// factory, or with two, does not compile.
import type { StageKind } from '../../dsl/nodes.ts';
import type { CompiledNode, CompiledStore } from '../../graph/types.ts';
import type { TransactionalStore } from '../../state/transactional.ts';
import type { TaskState } from './task-state.ts';
import type { NodeFactory } from './node-factory.ts';
import { AGGREGATE_NODES } from './aggregates.ts';
import { JOIN_NODES } from './joins.ts';
import { STREAM_TABLE_JOIN_NODES } from './stream-table-joins.ts';
import { PROCESS_NODES } from './process.ts';
import { DEDUPE_AND_VERSION_NODES } from './stateful.ts';
import { STATELESS_NODES } from './stateless.ts';
import { SUPPRESS_NODES } from './suppress.ts';
import { rowsOf, TABLE_NODES } from './tables.ts';
import { FOREIGN_KEY_JOIN_NODES } from './foreign-key-joins.ts';
import type { RuntimeNode } from './runtime-node.ts';
import { REPARTITION_NODES } from './repartition.ts';
import { COGROUP_NODES } from './cogroup.ts';

const FACTORIES = { ...STATELESS_NODES, ...DEDUPE_AND_VERSION_NODES, ...AGGREGATE_NODES, ...TABLE_NODES, ...JOIN_NODES, ...STREAM_TABLE_JOIN_NODES, ...SUPPRESS_NODES, ...PROCESS_NODES, ...REPARTITION_NODES, ...COGROUP_NODES, ...FOREIGN_KEY_JOIN_NODES } satisfies Record<StageKind, NodeFactory>;

type StoreOf = (name: string) => { store: TransactionalStore; spec: CompiledStore };

/** `nodeOf`: an already created node of the task (a table a join reads); nodes are created parents first. */
export function createRuntimeNode(task: TaskState, node: CompiledNode, storeOf: StoreOf, nodeOf: (name: string) => RuntimeNode): RuntimeNode {
  const factory: NodeFactory = FACTORIES[node.kind];
  return factory({ task, node, storeOf, tableInput: (i) => rowsOf(nodeOf(node.tableInputs![i]!), storeOf) });
}
