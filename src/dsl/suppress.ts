/**
 * What `Table.suppress` holds back. The buffer is a store of its own with a changelog written in the
 * transaction, so what was held back survives a crash and is emitted exactly once.
 */
export interface BufferConfig {
  /** Most keys held back per task. Default 10 000. */
  readonly maxRecords?: number;
  /** Most key + value bytes held back per task. Default 10 MiB. */
  readonly maxBytes?: number;
  /**
   * When the buffer is full: 'error' (default) fails the record that would overflow it with
   * SUPPRESSION_BUFFER_FULL (it goes to the dead-letter topic, its updates undone); 'emit-early' emits
   * the oldest held-back result before its time to make room.
   */
  readonly whenFull?: 'error' | 'emit-early';
}

export interface SuppressSpec {
  readonly until: 'window-closes' | 'time-limit';
  /** For 'time-limit': how long, in stream time, the first held-back update of a key waits. */
  readonly timeLimitMs: number;
  readonly maxRecords: number;
  readonly maxBytes: number;
  readonly whenFull: 'error' | 'emit-early';
}

const DEFAULT_MAX_RECORDS = 10_000;
const DEFAULT_MAX_BYTES = 10 * 1024 * 1024;

function spec(until: SuppressSpec['until'], timeLimitMs: number, buffer: BufferConfig): SuppressSpec {
  return {
    until,
    timeLimitMs,
    maxRecords: buffer.maxRecords ?? DEFAULT_MAX_RECORDS,
    maxBytes: buffer.maxBytes ?? DEFAULT_MAX_BYTES,
    whenFull: buffer.whenFull ?? 'error',
  };
}

export const Suppressed = {
  /**
   * Only the final result of each window (tumbling, hopping or session), once stream time passes its
   * end plus grace; deletes of merged-away sessions are dropped (they were never emitted).
   */
  untilWindowCloses(buffer: BufferConfig = {}): SuppressSpec {
    return spec('window-closes', 0, buffer);
  },
  /** At most one update per key per `timeLimitMs` of stream time: the latest, once the limit since the first held-back one has passed. */
  untilTimeLimit(timeLimitMs: number, buffer: BufferConfig = {}): SuppressSpec {
    return spec('time-limit', timeLimitMs, buffer);
  },
} as const;
