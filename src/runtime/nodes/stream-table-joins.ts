// Streams joined with tables inside a task: a stream record looks a row up (a co-partitioned table's,
// or a global table's by a key it computes); the tables' own updates emit nothing.
import type { CompiledNode } from '../../graph/types.ts';
import { errorCode } from '../../core/stage-errors.ts';
import { StageFailure, UnknownGlobalTableError } from './node-errors.ts';
import type { TaskState } from './task-state.ts';
import type { NodeFactories, RowReader } from './node-factory.ts';
import type { Spec } from './runtime-node.ts';
import type { Step } from './step.ts';
import { JoinNode } from './join-node.ts';
import { StreamGraceBuffer } from './stream-grace-buffer.ts';

/**
 * Stream records look the table's row up as of their processing, or in a versioned table as of their
 * own timestamp (a late or replayed record meets the row it would have met on time); the table's own
 * updates emit nothing.
 */
export class StreamTableJoinNode extends JoinNode {
  readonly #mode = (this.node.spec as Spec<'streamTableJoin'>).mode;

  constructor(
    task: TaskState,
    node: CompiledNode,
    private readonly table: RowReader,
    /** With a grace period (stream-grace-buffer.ts): where stream records wait. */
    private readonly buffer?: StreamGraceBuffer,
  ) {
    super(task, node, [(key, value) => this.#onRecord(key, value), () => undefined]);
  }

  override reset(): void {
    this.buffer?.reset();
  }

  #onRecord(key: unknown, value: unknown): Step {
    if (key === null || key === undefined) {
      this.task.metrics.nullKeysDropped++;
      return;
    }
    if (this.buffer !== undefined && !this.buffer.isDue(this.task.timestamp)) {
      this.buffer.hold(key, value);
      return;
    }
    const joined = this.#joined(key, value, this.task.timestamp);
    return joined === undefined ? undefined : this.forward(key, joined.value);
  }

  /** undefined: an inner join drops the record. */
  #joined(key: unknown, value: unknown, timestamp: number): { value: unknown } | undefined {
    const row = this.table.rowAsOf === undefined ? this.table.row(key) : this.table.rowAsOf(key, timestamp);
    if (row === undefined) {
      this.countMiss();
      if (this.#mode === 'inner') return undefined;
    }
    return { value: this.join(key, value, row ?? null) };
  }

  /** Stream records whose grace has passed join now, in timestamp order, each with its own timestamp. */
  override fireStreamTime(): Step {
    if (this.buffer === undefined) return;
    const results: { key: unknown; value: unknown; timestamp: number }[] = [];
    try {
      for (const r of this.buffer.release()) {
        const joined = this.#joined(r.key, r.value, r.timestamp);
        if (joined !== undefined) results.push({ key: r.key, value: joined.value, timestamp: r.timestamp });
      }
    } catch (e) {
      throw new StageFailure(this.name, e, 1, errorCode(e, 'JOIN_BUFFER_RELEASE_FAILED'));
    }
    return this.emitEach(results, 0);
  }
}

/** A stream joined with a global table by a key the stream computes: no co-partitioning needed. */
export class GlobalTableJoinNode extends JoinNode {
  readonly #spec = this.node.spec as Spec<'globalTableJoin'>;

  constructor(task: TaskState, node: CompiledNode, table: RowReader) {
    super(task, node, [(key, value) => this.#onRecord(key, value, table)]);
  }

  #onRecord(key: unknown, value: unknown, table: RowReader): Step {
    const tableKey = this.checkSync(this.#spec.keySelector(key, value));
    const row = tableKey === null || tableKey === undefined ? undefined : table.row(tableKey);
    if (row === undefined) {
      this.countMiss();
      if (this.#spec.mode === 'inner') return;
    }
    return this.forward(key, this.join(key, value, row ?? null));
  }
}

export const STREAM_TABLE_JOIN_NODES = {
  streamTableJoin: ({ task, node, tableInput, storeOf }) => {
    const graceMs = (node.spec as Spec<'streamTableJoin'>).graceMs;
    if (graceMs === undefined) return new StreamTableJoinNode(task, node, tableInput(0));
    const s = storeOf(node.stores[0]!);
    const n = new StreamTableJoinNode(task, node, tableInput(0), new StreamGraceBuffer(s.store, s.spec, task, graceMs));
    task.timeListeners.push(n);
    return n;
  },
  globalTableJoin: ({ task, node }) => {
    const rows = task.env.globalRows?.(node.globalStore!);
    if (rows === undefined) throw new UnknownGlobalTableError(node.name, node.globalStore!);
    return new GlobalTableJoinNode(task, node, rows);
  },
  // Never part of a sub-topology: compile keeps global tables out of the tasks.
  globalTable: ({ node }) => {
    throw new UnknownGlobalTableError(node.name, node.name);
  },
} satisfies NodeFactories;
