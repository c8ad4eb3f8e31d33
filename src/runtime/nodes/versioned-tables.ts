// Versioned tables inside a task (Kafka Streams' KIP-889/914): the table's store keeps each key's
// history (state/versioned.ts), so a stream record is joined with the row valid at its own
// timestamp. Stream time is the task's: it commits with the offsets and rolls back with an abort,
// so what the retention drops is the same in a replay as in the first run.
import type { CompiledStore } from '../../graph/types.ts';
import type { SerdeContext } from '../../serdes/serde.ts';
import type { TransactionalStore } from '../../state/transactional.ts';
import { decodeHistory, encodeHistory, latestValue, putVersion, valueAsOf } from '../../state/versioned.ts';
import type { RowReader } from './node-factory.ts';
import { TableUpdateNode } from './table-updates.ts';
import type { Step } from './step.ts';
import type { TaskState } from './task-state.ts';

/** A versioned table's rows, decoded: the latest, or the one valid at a time within the retention. */
export class VersionedRows implements RowReader {
  readonly #keyCtx: SerdeContext;
  readonly #valueCtx: SerdeContext;
  readonly #retentionMs: number;

  constructor(
    readonly store: TransactionalStore,
    readonly spec: CompiledStore,
    readonly task: TaskState,
  ) {
    this.#keyCtx = { topic: spec.changelogTopic, role: 'key' };
    this.#valueCtx = { topic: spec.changelogTopic, role: 'value' };
    this.#retentionMs = spec.versioned!.historyRetentionMs;
  }

  /** Stream time minus the retention: versions valid only before it are gone, and puts before it are refused. */
  get horizon(): number {
    return this.task.streamTime - this.#retentionMs;
  }

  keyBytes(key: unknown): Buffer {
    return this.spec.keySerde.serialize(key, this.#keyCtx) ?? Buffer.alloc(0);
  }

  #decode(bytes: Buffer | undefined): unknown {
    return bytes === undefined ? undefined : this.spec.valueSerde.deserialize(bytes, this.#valueCtx);
  }

  row(key: unknown): unknown {
    if (key === null || key === undefined) return undefined;
    const history = this.store.get(this.keyBytes(key));
    return history === undefined ? undefined : this.#decode(latestValue(history));
  }

  /** As Kafka Streams' `get(key, asOf)`: undefined for a time behind the retention, which the history no longer answers for. */
  rowAsOf(key: unknown, timestamp: number): unknown {
    if (key === null || key === undefined) return undefined;
    const history = this.store.get(this.keyBytes(key));
    return history === undefined ? undefined : this.#decode(valueAsOf(history, timestamp, this.horizon));
  }
}

/**
 * `toTable` / `builder.table` with `versioned`: each update becomes a version of its key, valid from
 * its record's timestamp. Only an update that is the key's newest version goes downstream: an
 * out-of-order one changes the history, not the table's current row, so table-table joins and
 * re-groupings downstream ignore it, as Kafka Streams' do. An update older than the retention is
 * dropped (counted with the late records).
 */
export class VersionedToTableNode extends TableUpdateNode implements RowReader {
  readonly #rows = new VersionedRows(this.store, this.storeSpec, this.task);

  row(key: unknown): unknown {
    return this.#rows.row(key);
  }

  rowAsOf(key: unknown, timestamp: number): unknown {
    return this.#rows.rowAsOf(key, timestamp);
  }

  protected update(key: unknown, kb: Buffer, value: unknown, bytes: Buffer | null): Step {
    const stored = this.store.get(kb);
    const timestamp = this.task.timestamp;
    const put = putVersion(stored === undefined ? [] : decodeHistory(stored), { validFrom: timestamp, value: bytes }, this.#rows.horizon);
    if (!put.stored) {
      this.task.metrics.lateRecordsDropped++;
      return;
    }
    if (put.history === undefined) {
      if (stored !== undefined) this.store.delete(kb, timestamp);
    } else {
      this.store.put(kb, encodeHistory(put.history), timestamp);
    }
    if (!put.latest) return;
    return this.forward(key, value);
  }
}
