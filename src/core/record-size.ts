import { PermanentError } from './stage-errors.ts';
import type { RecordHeader } from './records.ts';

/** librdkafka's default `message.max.bytes`: a produce() of a larger record fails at once with MSG_SIZE_TOO_LARGE. */
export const DEFAULT_MESSAGE_MAX_BYTES = 1_000_000;

/** Room kept for what the worker adds to every output: the lineage headers and their names. */
export const LINEAGE_HEADER_ALLOWANCE = 512;

/** The largest key + value + headers a task may hand the producer, given the producer's `message.max.bytes`. */
export function maxRecordBytesFor(messageMaxBytes: number = DEFAULT_MESSAGE_MAX_BYTES): number {
  return Math.max(1, messageMaxBytes - LINEAGE_HEADER_ALLOWANCE);
}

/**
 * A record too large to produce. Thrown where the record is built, not where it is produced: there
 * the input record that caused it is still known, so it is dead-lettered with nothing else of it
 * written, instead of failing the transaction again on every replay and blocking its partition.
 */
export class RecordTooLargeError extends PermanentError {
  constructor(
    readonly topic: string,
    readonly bytes: number,
    readonly limit: number,
  ) {
    super(`a record of ${bytes} bytes for topic ${topic} is over the ${limit} bytes a produce may carry (the producer's message.max.bytes less room for onceflow's headers)`, { code: 'RECORD_TOO_LARGE' });
  }
}

export function checkRecordSize(topic: string, key: Buffer | null, value: Buffer | null, headers: readonly RecordHeader[], limit: number): void {
  let bytes = (key?.length ?? 0) + (value?.length ?? 0);
  for (const h of headers) bytes += h.key.length + h.value.length;
  if (bytes > limit) throw new RecordTooLargeError(topic, bytes, limit);
}
