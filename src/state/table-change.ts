import type { Serde, SerdeContext, SerdeEnvironment } from '../serdes/serde.ts';
import { SerdeError } from '../serdes/errors.ts';

/**
 * What a table re-grouping sends to one group for one update of a table row: the value to take out
 * of the group's aggregate (the row's previous value, when it was in this group) and the value to
 * put in (its new value, when it is in this group). A row that stays in its group sends both in one
 * record, so the group's aggregate changes once, as Kafka Streams' `Change` does.
 */
export interface TableChange {
  readonly removed?: unknown;
  readonly added?: unknown;
}

/** A repartition record of a table re-grouping whose bytes are not a TableChange. */
export class TableChangeInvalidError extends SerdeError {
  readonly code = 'TABLE_CHANGE_INVALID';
}

/** The one place TABLE_CHANGE_INVALID is raised. */
function invalid(ctx: SerdeContext, operation: 'serialize' | 'deserialize', detail: string): never {
  throw new TableChangeInvalidError(ctx, operation, detail);
}

const REMOVED = 1;
const ADDED = 2;
const LENGTH_BYTES = 4;

/**
 * The repartition topic of a table re-grouping carries TableChanges, encoded with the grouped value's
 * serde behind a flags byte. Why an envelope in the value and not a header: a subtract and an add of
 * the same value are different records that the aggregate must tell apart, and the value is the part
 * of a record every serde, restore and dead-letter path already carries whole; a header dropped or
 * rewritten on the way (setHeaders runs on user records) would silently turn a subtract into an add.
 * Layout: flags (1: removed, 2: added); with both, the removed value's length (4 bytes, big-endian)
 * then the two values; with one, its value alone.
 */
export function tableChangeSerde(inner: Serde<unknown>): Serde<TableChange> {
  const encode = (value: unknown, ctx: SerdeContext): Buffer => inner.serialize(value, ctx) ?? Buffer.alloc(0);
  const parts = (data: Buffer | null, ctx: SerdeContext): { removed?: Buffer; added?: Buffer } => {
    const flags = data?.[0];
    if (data === null || flags === undefined || flags < REMOVED || flags > (REMOVED | ADDED)) invalid(ctx, 'deserialize', `expected a table change (flags 1-3), got ${data === null ? 'no bytes' : `flags ${flags ?? 'none'}`}`);
    if (flags === REMOVED) return { removed: data.subarray(1) };
    if (flags === ADDED) return { added: data.subarray(1) };
    const length = data.length >= 1 + LENGTH_BYTES ? data.readUInt32BE(1) : -1;
    const start = 1 + LENGTH_BYTES;
    if (length < 0 || start + length > data.length) invalid(ctx, 'deserialize', `the removed value's length runs past the record (${data.length} bytes)`);
    return { removed: data.subarray(start, start + length), added: data.subarray(start + length) };
  };
  return {
    name: `table-change(${inner.name})`,
    serialize: (change, ctx) => {
      const removed = change.removed === undefined ? undefined : encode(change.removed, ctx);
      const added = change.added === undefined ? undefined : encode(change.added, ctx);
      if (removed !== undefined && added !== undefined) {
        const head = Buffer.alloc(1 + LENGTH_BYTES);
        head[0] = REMOVED | ADDED;
        head.writeUInt32BE(removed.length, 1);
        return Buffer.concat([head, removed, added]);
      }
      if (removed !== undefined) return Buffer.concat([Buffer.of(REMOVED), removed]);
      if (added !== undefined) return Buffer.concat([Buffer.of(ADDED), added]);
      return invalid(ctx, 'serialize', 'a table change with neither a removed nor an added value');
    },
    deserialize: (data, ctx) => {
      const { removed, added } = parts(data, ctx);
      return { ...(removed !== undefined ? { removed: inner.deserialize(removed, ctx) } : {}), ...(added !== undefined ? { added: inner.deserialize(added, ctx) } : {}) };
    },
    ...(inner.prepare ? { prepare: (ctx: SerdeContext, env: SerdeEnvironment) => inner.prepare!(ctx, env) } : {}),
    ...(inner.resolve
      ? {
          resolve: (data: Buffer | null, ctx: SerdeContext) => {
            const pending = Object.values(parts(data, ctx)).map((bytes) => inner.resolve!(bytes, ctx)).filter((p) => p !== null);
            return pending.length === 0 ? null : Promise.all(pending).then(() => undefined);
          },
        }
      : {}),
  };
}

/**
 * The store of a re-grouped aggregate: a subtractor that returns null deletes the group's row (a
 * tombstone downstream, as in Kafka Streams), whatever the state serde does with null.
 */
export function deletableSerde<T>(inner: Serde<T>): Serde<T | null> {
  return {
    name: inner.name,
    serialize: (value, ctx) => (value === null || value === undefined ? null : inner.serialize(value, ctx)),
    deserialize: (data, ctx) => (data === null ? null : inner.deserialize(data, ctx)),
    ...(inner.prepare ? { prepare: (ctx: SerdeContext, env: SerdeEnvironment) => inner.prepare!(ctx, env) } : {}),
    ...(inner.resolve ? { resolve: (data: Buffer | null, ctx: SerdeContext) => (data === null ? null : inner.resolve!(data, ctx)) } : {}),
  };
}
