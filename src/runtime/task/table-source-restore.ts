// A table read straight from a topic (builder.table) is restored from that topic, which holds what
// producers wrote, not what the table stored. A record its serdes cannot decode was dead-lettered
// when the table's task processed it, in that transaction, leaving the key's previous row in place;
// a restore that applied its bytes anyway would put a row in the store that no join can decode, and
// every stream record meeting it would be dead-lettered in its stead. So the restore skips it, and
// says which record it skipped: dead-lettering it again would add a duplicate on every restart.
import { OnceflowError } from '../../errors.ts';
import { isTransient } from '../../core/stage-errors.ts';
import type { CompiledStore } from '../../graph/types.ts';
import type { SerdeContext } from '../../serdes/serde.ts';

/** Why a record of a table's source topic is not restored: its serde's error code and message. */
export interface RestoreRejection {
  readonly code: string;
  readonly message: string;
}

/**
 * Whether the table's serdes decode a record of its source topic, as its source stage does (a null
 * value is a tombstone). A serde that must fetch a schema first (the registry's) is awaited; a
 * transient failure (the registry down) fails the restore, as it would fail processing.
 */
export function checkTableSourceRecord(spec: CompiledStore, key: Buffer, value: Buffer | null): RestoreRejection | undefined | Promise<RestoreRejection | undefined> {
  const keyCtx: SerdeContext = { topic: spec.changelogTopic, role: 'key' };
  const valueCtx: SerdeContext = { topic: spec.changelogTopic, role: 'value' };
  const decode = (): RestoreRejection | undefined => {
    try {
      spec.keySerde.deserialize(key, keyCtx);
      if (value !== null) spec.valueSerde.deserialize(value, valueCtx);
      return undefined;
    } catch (e) {
      if (isTransient(e)) throw e;
      return { code: e instanceof OnceflowError ? e.code : 'DESERIALIZATION_FAILED', message: e instanceof Error ? e.message : String(e) };
    }
  };
  const pending = [spec.keySerde.resolve?.(key, keyCtx), value === null ? null : spec.valueSerde.resolve?.(value, valueCtx)].filter((p) => p !== null && p !== undefined);
  return pending.length === 0 ? decode() : Promise.all(pending).then(decode);
}
