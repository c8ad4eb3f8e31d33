import type { CompiledGlobalTable } from '../../graph/types.ts';
import type { SerdeContext } from '../../serdes/serde.ts';
import { mapKey } from '../../state/store.ts';

/**
 * The rows of one global table, decoded once as they arrive. Written only by the reader that follows
 * the table's topic (outside any transaction: the table is read-only to the tasks), read by joins.
 */
export class GlobalTableRows {
  readonly #rows = new Map<string, unknown>();
  readonly #keyCtx: SerdeContext;
  readonly #valueCtx: SerdeContext;

  constructor(readonly table: CompiledGlobalTable) {
    this.#keyCtx = { topic: table.topic, role: 'key' };
    this.#valueCtx = { topic: table.topic, role: 'value' };
  }

  get size(): number {
    return this.#rows.size;
  }

  /** Rows whose value did not decode: skipped, since no transaction or record is there to dead-letter. */
  undecodable = 0;

  /** Applies one record of the table's topic; a null value deletes the row. */
  apply(key: Buffer | null, value: Buffer | null): void {
    if (key === null) return;
    if (value === null) {
      this.#rows.delete(mapKey(key));
      return;
    }
    let row: unknown;
    try {
      row = this.table.valueSerde.deserialize(value, this.#valueCtx);
    } catch {
      this.undecodable++;
      return;
    }
    this.#rows.set(mapKey(key), row);
  }

  row(key: unknown): unknown {
    const kb = this.table.keySerde.serialize(key, this.#keyCtx);
    return kb === null ? undefined : this.#rows.get(mapKey(kb));
  }
}

/** Every global table of a topology, by store name. */
export function globalTableRows(tables: readonly CompiledGlobalTable[]): Map<string, GlobalTableRows> {
  return new Map(tables.map((t) => [t.store, new GlobalTableRows(t)]));
}
