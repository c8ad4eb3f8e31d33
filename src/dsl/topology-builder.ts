import type { Serde } from '../serdes/serde.ts';
import type { NodeDef, NodeRecorder, StageSpec } from './nodes.ts';
import type { SourceOptions, TableSourceOptions, TopologyOptions } from './types.ts';
import { asSerde, type AnySerde } from './serde-typing.ts';
import { Stream } from './stream.ts';
import { GlobalTable, Table } from './table.ts';
// Defines Table.groupBy (a module augmentation, as stream.ts defines Table.toStream).
import './grouped-tables.ts';
// Defines Stream.repartition and GroupedStream.cogroup (module augmentations, as above).
import './repartition.ts';
import './cogroup.ts';

/** Lets loadTopology recognise a builder even if it came from another copy of this module. */
export const TOPOLOGY_BUILDER_BRAND: unique symbol = Symbol.for('onceflow.TopologyBuilder') as never;

/**
 * Records the topology as an append-only list of nodes. Streams are immutable handles on a node:
 * every operation appends a node and returns a new handle, so a stream can feed several branches.
 * Building does no I/O; `compile` validates and plans.
 */
export class TopologyBuilder implements NodeRecorder {
  readonly [TOPOLOGY_BUILDER_BRAND] = true;
  readonly #nodes: NodeDef[] = [];
  #options: TopologyOptions;

  constructor(options: TopologyOptions) {
    this.#options = { ...options };
  }

  get options(): TopologyOptions {
    return this.#options;
  }

  /** The node list, in creation order. */
  get nodes(): readonly NodeDef[] {
    return this.#nodes;
  }

  /** Records the file the topology came from, for error messages. */
  setSourceFile(file: string): void {
    this.#options = { ...this.#options, sourceFile: file };
  }

  stream<K, V>(topic: string, opts: SourceOptions<K, V> & { readonly key: Serde<K> }): Stream<K, V>;
  stream<V>(topic: string, opts: SourceOptions<null, V>): Stream<null, V>;
  stream<K, V>(topic: string, opts: SourceOptions<K, V>): Stream<K, V> {
    const spec: StageSpec = opts.timestamp
      ? { kind: 'source', topic, timestamp: opts.timestamp as (k: unknown, v: unknown, ts: number) => number }
      : { kind: 'source', topic };
    const index = this.addNode(spec, [], opts.name, asSerde(opts.key) as AnySerde | undefined, asSerde(opts.value) as AnySerde);
    return new Stream<K, V>(this, index, asSerde(opts.key), asSerde(opts.value));
  }

  /**
   * A table whose rows are the latest value per key of `topic` (a null value deletes the row). It is
   * kept in a store with a changelog, written in the same transaction as everything else.
   */
  table<K, V>(topic: string, opts: TableSourceOptions<K, V>): Table<K, V> {
    const source = this.addNode({ kind: 'source', topic, table: true }, [], undefined, opts.key as AnySerde, opts.value as AnySerde);
    const spec: StageSpec = { kind: 'toTable', ...(opts.store !== undefined ? { store: opts.store } : {}), ...(opts.versioned !== undefined ? { versioned: opts.versioned } : {}) };
    const index = this.addNode(spec, [source], opts.name, opts.key as AnySerde, opts.value as AnySerde);
    return new Table<K, V>(this, index, opts.key, opts.value);
  }

  /**
   * A read-only table every worker loads whole from `topic` before it processes anything, and keeps
   * up to date while it runs, outside the transaction. Streams join it by a key they compute, so it
   * needs no co-partitioning.
   */
  globalTable<K, V>(topic: string, opts: TableSourceOptions<K, V>): GlobalTable<K, V> {
    const spec: StageSpec = { kind: 'globalTable', topic, ...(opts.store !== undefined ? { store: opts.store } : {}) };
    const index = this.addNode(spec, [], opts.name, opts.key as AnySerde, opts.value as AnySerde);
    return new GlobalTable<K, V>(this, index, opts.key, opts.value);
  }

  /** @internal */
  addNode(spec: StageSpec, parents: readonly number[], userName: string | undefined, keySerde: AnySerde | undefined, valueSerde: AnySerde | undefined): number {
    const index = this.#nodes.length;
    const def: NodeDef = { index, spec, parents, ...(userName !== undefined ? { userName } : {}), ...(keySerde ? { keySerde } : {}), ...(valueSerde ? { valueSerde } : {}) };
    this.#nodes.push(Object.freeze(def));
    return index;
  }
}

export function isTopologyBuilder(x: unknown): x is TopologyBuilder {
  return typeof x === 'object' && x !== null && (x as { [TOPOLOGY_BUILDER_BRAND]?: unknown })[TOPOLOGY_BUILDER_BRAND] === true;
}

