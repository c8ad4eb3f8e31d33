import { DEAD_LETTER } from '../core/headers.ts';
import { headersToObject, type LoggedRecord } from './topic-log.ts';

/** A committed record of the dead-letter topic, with its error headers unpacked. */
export interface DeadLetter {
  readonly key: Buffer | null;
  readonly value: Buffer | null;
  readonly timestamp: number;
  readonly headers: Readonly<Record<string, string>>;
  readonly code: string;
  readonly message: string;
  readonly stage: string;
  readonly attempts: number;
  readonly source: { readonly topic: string; readonly partition: number; readonly offset: number };
  /** Set when the dead letter carries only the first bytes of the input's key and value: their full sizes. */
  readonly excerpt?: { readonly keyBytes: number; readonly valueBytes: number };
}

/** Unpacks the error headers the worker writes on a dead-letter record. */
export function deadLetterOf(r: LoggedRecord): DeadLetter {
  const h = headersToObject(r.headers);
  return {
    key: r.key,
    value: r.value,
    timestamp: r.timestamp,
    headers: h,
    code: h[DEAD_LETTER.code] ?? '',
    message: h[DEAD_LETTER.message] ?? '',
    stage: h[DEAD_LETTER.stage] ?? '',
    attempts: Number(h[DEAD_LETTER.attempts]),
    source: { topic: h[DEAD_LETTER.sourceTopic] ?? '', partition: Number(h[DEAD_LETTER.sourcePartition]), offset: Number(h[DEAD_LETTER.sourceOffset]) },
    ...(h[DEAD_LETTER.excerpt] === undefined ? {} : { excerpt: { keyBytes: Number(h[DEAD_LETTER.keyBytes]), valueBytes: Number(h[DEAD_LETTER.valueBytes]) } }),
  };
}
