// What every stage that materializes a table does first with an update: a null key is dropped (as
// Kafka Streams does), a null value is a deletion, any other value is stored in its serialized form.
import { StatefulNode } from './stateful.ts';
import type { Step } from './step.ts';

export abstract class TableUpdateNode extends StatefulNode {
  protected apply(key: unknown, value: unknown): Step {
    if (key === null || key === undefined) {
      this.task.metrics.nullKeysDropped++;
      return;
    }
    const bytes = value === null || value === undefined ? null : this.storeSpec.valueSerde.serialize(value, this.valueCtx);
    return this.update(key, this.keyBytes(key), bytes === null ? null : value, bytes);
  }

  /** `bytes` null: the row is deleted (`value` is then null too). */
  protected abstract update(key: unknown, keyBytes: Buffer, value: unknown, bytes: Buffer | null): Step;
}
