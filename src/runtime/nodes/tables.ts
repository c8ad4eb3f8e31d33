// Tables inside a task: a table's rows can be read by key (RowReader), which is how joins see the
// table's value as of the record they join; a table's updates flow on as (key, value), a deleted
// row as (key, null).
import { isDeepStrictEqual } from 'node:util';
import type { KeyValue } from '../../dsl/types.ts';
import type { CompiledNode, CompiledStore } from '../../graph/types.ts';
import type { TableChange } from '../../state/table-change.ts';
import type { TransactionalStore } from '../../state/transactional.ts';
import { StatefulNode } from './stateful.ts';
import type { NodeFactories, RowReader } from './node-factory.ts';
import { RuntimeNode, type Spec } from './runtime-node.ts';
import type { Step } from './step.ts';
import { VersionedToTableNode } from './versioned-tables.ts';
import { TableUpdateNode } from './table-updates.ts';

export function isRowReader(node: RuntimeNode): node is RuntimeNode & RowReader {
  return typeof (node as Partial<RowReader>).row === 'function';
}

/** Rows of a key-value store (a table's or an aggregate's), decoded. */
export class StoreRows implements RowReader {
  readonly #keyCtx;
  readonly #valueCtx;

  constructor(
    readonly store: TransactionalStore,
    readonly spec: CompiledStore,
  ) {
    this.#keyCtx = { topic: spec.changelogTopic, role: 'key' as const };
    this.#valueCtx = { topic: spec.changelogTopic, role: 'value' as const };
  }

  row(key: unknown): unknown {
    if (key === null || key === undefined) return undefined;
    const kb = this.spec.keySerde.serialize(key, this.#keyCtx) ?? Buffer.alloc(0);
    const bytes = this.store.get(kb);
    return bytes === undefined ? undefined : this.spec.valueSerde.deserialize(bytes, this.#valueCtx);
  }
}

/**
 * The rows of a table stage: read from its store when it has one (a materialized table, an aggregate),
 * else computed from its own inputs' rows (filter, mapValues, a table-table join).
 */
export function rowsOf(node: RuntimeNode, storeOf: (name: string) => { store: TransactionalStore; spec: CompiledStore }): RowReader {
  const store = node.node.stores[0];
  if (store !== undefined) {
    const s = storeOf(store);
    // A versioned table's node reads its history itself: it knows the task's stream time, the retention's reference.
    if (s.spec.versioned !== undefined) return node as RuntimeNode & RowReader;
    return new StoreRows(s.store, s.spec);
  }
  return node as RuntimeNode & RowReader;
}

/** `stream.toTable()` and `builder.table(topic)`: the latest value per key, in a changelogged store. */
export class ToTableNode extends TableUpdateNode implements RowReader {
  readonly #rows = new StoreRows(this.store, this.storeSpec);

  row(key: unknown): unknown {
    return this.#rows.row(key);
  }

  protected update(key: unknown, kb: Buffer, value: unknown, bytes: Buffer | null): Step {
    if (bytes === null) this.store.delete(kb, this.task.timestamp);
    else this.store.put(kb, bytes, this.task.timestamp);
    return this.forward(key, value);
  }
}

/** `table.filter`: a rejected row is a deleted row downstream. */
export class TableFilterNode extends RuntimeNode implements RowReader {
  readonly #spec = this.node.spec as Spec<'tableFilter'>;
  readonly rowAsOf?: RowReader['rowAsOf'];

  constructor(
    task: ConstructorParameters<typeof RuntimeNode>[0],
    node: CompiledNode,
    readonly input: RowReader,
  ) {
    super(task, node);
    const asOf = input.rowAsOf?.bind(input);
    if (asOf !== undefined) this.rowAsOf = (key, timestamp) => this.#kept(key, asOf(key, timestamp));
  }

  #kept(key: unknown, value: unknown): unknown {
    return value !== undefined && this.#keeps(key, value) ? value : undefined;
  }

  #keeps(key: unknown, value: unknown): boolean {
    return Boolean(this.checkSync(this.#spec.fn(key, value))) !== this.#spec.negate;
  }

  row(key: unknown): unknown {
    return this.#kept(key, this.input.row(key));
  }

  protected apply(key: unknown, value: unknown): Step {
    if (value === null || value === undefined) return this.forward(key, null);
    return this.forward(key, this.#keeps(key, value) ? value : null);
  }
}

/** `table.mapValues`: deleted rows stay deleted. */
export class TableMapValuesNode extends RuntimeNode implements RowReader {
  readonly #fn = (this.node.spec as Spec<'tableMapValues'>).fn;
  readonly rowAsOf?: RowReader['rowAsOf'];

  constructor(
    task: ConstructorParameters<typeof RuntimeNode>[0],
    node: CompiledNode,
    readonly input: RowReader,
  ) {
    super(task, node);
    const asOf = input.rowAsOf?.bind(input);
    if (asOf !== undefined) this.rowAsOf = (key, timestamp) => this.#mapped(asOf(key, timestamp));
  }

  #mapped(value: unknown): unknown {
    return value === undefined ? undefined : this.checkSync(this.#fn(value));
  }

  row(key: unknown): unknown {
    return this.#mapped(this.input.row(key));
  }

  protected apply(key: unknown, value: unknown): Step {
    if (value === null || value === undefined) return this.forward(key, null);
    return this.forward(key, this.checkSync(this.#fn(value)));
  }
}

/**
 * `table.groupBy(selector)`: each update of a row sends a TableChange to the group it leaves (its
 * previous value, removed) and to the group it joins (its new value, added), one change with both when
 * the group stays the same. The previous value comes from this stage's own store of the rows it
 * placed, not from the table upstream: that store has already been written when the update arrives,
 * and what was last sent to a group is what must be taken out of it, whatever the table upstream is
 * (a filter, a join, an aggregate whose record cache held updates back).
 */
export class TableGroupByNode extends StatefulNode {
  readonly #select = (this.node.spec as Spec<'tableGroupBy'>).fn;

  #groupOf(key: unknown, value: unknown): KeyValue<unknown, unknown> | undefined {
    if (value === undefined) return undefined;
    const group = this.checkSync(this.#select(key, value)) as KeyValue<unknown, unknown>;
    if (group[0] !== null && group[0] !== undefined) return group;
    this.task.metrics.nullKeysDropped++;
    return undefined;
  }

  protected apply(key: unknown, value: unknown): Step {
    if (key === null || key === undefined) {
      this.task.metrics.nullKeysDropped++;
      return;
    }
    const kb = this.keyBytes(key);
    const stored = this.store.get(kb);
    const previous = stored === undefined ? undefined : this.storeSpec.valueSerde.deserialize(stored, this.valueCtx);
    const next = value === null ? undefined : value;
    const from = this.#groupOf(key, previous);
    const to = this.#groupOf(key, next);
    if (next === undefined) {
      if (stored !== undefined) this.store.delete(kb, this.task.timestamp);
    } else {
      this.store.put(kb, this.storeSpec.valueSerde.serialize(next, this.valueCtx) ?? Buffer.alloc(0), this.task.timestamp);
    }
    if (from !== undefined && to !== undefined && isDeepStrictEqual(from[0], to[0])) return this.forward(to[0], { removed: from[1], added: to[1] } satisfies TableChange);
    const changes: KeyValue<unknown, TableChange>[] = [];
    if (from !== undefined) changes.push([from[0], { removed: from[1] }]);
    if (to !== undefined) changes.push([to[0], { added: to[1] }]);
    return this.forwardPairs(changes, 0);
  }
}

export const TABLE_NODES = {
  toTable: ({ task, node, storeOf }) => {
    const s = storeOf(node.stores[0]!);
    return s.spec.versioned !== undefined ? new VersionedToTableNode(task, node, s.store, s.spec) : new ToTableNode(task, node, s.store, s.spec);
  },
  tableFilter: ({ task, node, tableInput }) => new TableFilterNode(task, node, tableInput(0)),
  tableMapValues: ({ task, node, tableInput }) => new TableMapValuesNode(task, node, tableInput(0)),
  tableGroupBy: ({ task, node, storeOf }) => {
    const s = storeOf(node.stores[0]!);
    return new TableGroupByNode(task, node, s.store, s.spec);
  },
} satisfies NodeFactories;
