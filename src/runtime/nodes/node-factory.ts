import type { StageKind } from '../../dsl/nodes.ts';
import type { CompiledNode, CompiledStore } from '../../graph/types.ts';
import type { TransactionalStore } from '../../state/transactional.ts';
import type { TaskState } from './task-state.ts';
import type { RuntimeNode } from './runtime-node.ts';

/** A table's current rows (the open transaction's writes included), read by a join or a table operation; undefined: no row for the key. */
export interface RowReader {
  row(key: unknown): unknown;
  /** A versioned table's row valid at `timestamp` (nodes/versioned-tables.ts); absent on a table that keeps no history. */
  rowAsOf?(key: unknown, timestamp: number): unknown;
}

/** What a factory gets to build a task's stage of one compiled node. */
export interface NodeBuild {
  readonly task: TaskState;
  readonly node: CompiledNode;
  /** One of the task's stores, with what was compiled of it. */
  storeOf(name: string): { store: TransactionalStore; spec: CompiledStore };
  /** The rows of the node's `i`-th table input (nodes are built parents first). */
  tableInput(i: number): RowReader;
}

export type NodeFactory = (build: NodeBuild) => RuntimeNode;

/**
 * The stage kinds one operator family builds. Each family's file lists its own; nodes/registry.ts
 * merges them and checks that every kind has exactly one, so a new kind is added in its family's file.
 */
export type NodeFactories = Partial<Record<StageKind, NodeFactory>>;
