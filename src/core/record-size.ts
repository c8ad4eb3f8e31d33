import { PermanentError } from './stage-errors.ts';
import { DEAD_LETTER } from './headers.ts';
import type { RecordHeader } from './records.ts';

/** librdkafka's default `message.max.bytes`: a produce() of a larger record fails at once with MSG_SIZE_TOO_LARGE. */
export const DEFAULT_MESSAGE_MAX_BYTES = 1_000_000;

/** librdkafka's default batch.size: a batch of several records is filled up to it, whatever the topic's limit. */
export const DEFAULT_BATCH_SIZE = 1_000_000;

/** The producer's message.max.bytes as configured (librdkafka's default otherwise): what one produce may carry. */
export function producerMessageMaxBytes(kafka: Readonly<Record<string, unknown>>): number {
  const configured = Number(kafka['message.max.bytes']);
  return Number.isFinite(configured) && configured > 0 ? configured : DEFAULT_MESSAGE_MAX_BYTES;
}

/** Room kept for what the worker adds to every output: the lineage headers and their names, and the record's framing. */
export const LINEAGE_HEADER_ALLOWANCE = 512;

/** How much of an input's key and value a dead letter keeps when the whole record may not go to the dead-letter topic. */
export const DEAD_LETTER_EXCERPT_BYTES = 1024;

/** The largest key + value + headers a task may hand the producer, given the smallest limit a record of it meets. */
export function maxRecordBytesFor(messageMaxBytes: number = DEFAULT_MESSAGE_MAX_BYTES): number {
  return Math.max(1, messageMaxBytes - LINEAGE_HEADER_ALLOWANCE);
}

/**
 * The two limits a produced record meets: the producer's `message.max.bytes` (librdkafka refuses a
 * larger record inside produce()) and the topic's own `max.message.bytes` (the broker refuses the
 * batch, and the transaction with it, on every replay). Topics not listed have only the first.
 */
export class RecordSizeLimits {
  readonly #topics: ReadonlyMap<string, number>;

  constructor(
    readonly messageMaxBytes: number = DEFAULT_MESSAGE_MAX_BYTES,
    topicMaxMessageBytes: ReadonlyMap<string, number> | Readonly<Record<string, number>> = new Map(),
  ) {
    this.#topics = topicMaxMessageBytes instanceof Map ? topicMaxMessageBytes : new Map(Object.entries(topicMaxMessageBytes));
  }

  /** Every known topic's `max.message.bytes`, by topic. */
  topicLimits(): Record<string, number> {
    return Object.fromEntries(this.#topics);
  }

  /** The topic's `max.message.bytes`, when it is known. */
  topicMaxMessageBytes(topic: string): number | undefined {
    return this.#topics.get(topic);
  }

  /** Largest key + value + headers of one record for `topic`. */
  maxRecordBytes(topic: string): number {
    return maxRecordBytesFor(Math.min(this.messageMaxBytes, this.#topics.get(topic) ?? Number.POSITIVE_INFINITY));
  }

  /** Which of the two limits `maxRecordBytes(topic)` comes from, for error messages. */
  describe(topic: string): string {
    const topicLimit = this.#topics.get(topic);
    return topicLimit !== undefined && topicLimit < this.messageMaxBytes
      ? `topic ${topic}'s max.message.bytes (${topicLimit})`
      : `the producer's message.max.bytes (${this.messageMaxBytes})`;
  }
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
    limitSource = "the producer's message.max.bytes",
  ) {
    super(`a record of ${bytes} bytes for topic ${topic} is over the ${limit} bytes a produce may carry (${limitSource}, less room for onceflow's headers)`, { code: 'RECORD_TOO_LARGE' });
  }
}

export function recordBytes(key: Buffer | null, value: Buffer | null, headers: readonly RecordHeader[]): number {
  let bytes = (key?.length ?? 0) + (value?.length ?? 0);
  for (const h of headers) bytes += Buffer.byteLength(h.key) + h.value.length;
  return bytes;
}

export function checkRecordSize(topic: string, key: Buffer | null, value: Buffer | null, headers: readonly RecordHeader[], limits: RecordSizeLimits | number): void {
  const limit = typeof limits === 'number' ? limits : limits.maxRecordBytes(topic);
  const bytes = recordBytes(key, value, headers);
  if (bytes > limit) throw new RecordTooLargeError(topic, bytes, limit, typeof limits === 'number' ? undefined : limits.describe(topic));
}

/** What a dead letter carries of its input: all of it, or an excerpt (its DEAD_LETTER.excerpt header then says of what). */
export interface DeadLetterBody {
  readonly key: Buffer | null;
  readonly value: Buffer | null;
  readonly headers: readonly RecordHeader[];
}

/**
 * The body of a dead letter for `input` that the dead-letter topic takes. A record over a size limit
 * is dead-lettered with an excerpt even when it would fit: its dead letter is not to be replayed as
 * it is (it would fail the same way), and a dead letter nearly as large as the record meets limits as
 * tight as the ones it failed. Any other dead letter carries the whole input unless that is over the
 * dead-letter topic's limit. Throws RecordTooLargeError when even the excerpt is (headers alone too large).
 */
export function deadLetterBody(dlqTopic: string, input: DeadLetterBody, errorHeaders: readonly RecordHeader[], limits: RecordSizeLimits, excerpt: boolean): DeadLetterBody {
  const headers = [...input.headers, ...errorHeaders];
  const limit = limits.maxRecordBytes(dlqTopic);
  const keyLong = (input.key?.length ?? 0) > DEAD_LETTER_EXCERPT_BYTES;
  const valueLong = (input.value?.length ?? 0) > DEAD_LETTER_EXCERPT_BYTES;
  if ((!excerpt || (!keyLong && !valueLong)) && recordBytes(input.key, input.value, headers) <= limit) return { key: input.key, value: input.value, headers };
  const cut = [...(keyLong ? ['key'] : []), ...(valueLong ? ['value'] : [])];
  if (cut.length === 0) {
    checkRecordSize(dlqTopic, input.key, input.value, headers, limits);
    return { key: input.key, value: input.value, headers };
  }
  const body: DeadLetterBody = {
    key: input.key === null ? null : input.key.subarray(0, DEAD_LETTER_EXCERPT_BYTES),
    value: input.value === null ? null : input.value.subarray(0, DEAD_LETTER_EXCERPT_BYTES),
    headers: [
      ...headers,
      header(DEAD_LETTER.excerpt, cut.join(',')),
      header(DEAD_LETTER.keyBytes, String(input.key?.length ?? 0)),
      header(DEAD_LETTER.valueBytes, String(input.value?.length ?? 0)),
    ],
  };
  checkRecordSize(dlqTopic, body.key, body.value, body.headers, limits);
  return body;
}

function header(key: string, value: string): RecordHeader {
  return { key, value: Buffer.from(value, 'utf8') };
}
