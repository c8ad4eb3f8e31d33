import { OnceflowError } from '../errors.ts';

export interface StageErrorOptions {
  readonly cause?: unknown;
  /** Overrides the code written to the `onceflow.error.code` dead-letter header. */
  readonly code?: string;
}

/**
 * Throw from a stage when trying the same record again may succeed (a timeout, a 503). The engine
 * retries the stage with bounded exponential backoff and jitter, then dead-letters the record.
 */
export class RetriableError extends OnceflowError {
  readonly code: string;
  constructor(message: string, opts: StageErrorOptions = {}) {
    super(message, opts.cause !== undefined ? { cause: opts.cause } : undefined);
    this.code = opts.code ?? 'RETRIABLE';
  }
}

/** Throw from a stage when the record can never succeed: it goes to the dead-letter topic at once. */
export class PermanentError extends OnceflowError {
  readonly code: string;
  constructor(message: string, opts: StageErrorOptions = {}) {
    super(message, opts.cause !== undefined ? { cause: opts.cause } : undefined);
    this.code = opts.code ?? 'PERMANENT';
  }
}

/** The code an error names itself by, for the `onceflow.error.code` dead-letter header. */
export function errorCode(e: unknown, fallback: string): string {
  const code = (e as { code?: unknown } | null)?.code;
  return typeof code === 'string' && code.length > 0 ? code : fallback;
}

/**
 * Not the record's fault: a RetriableError, or an error that says of itself a later try may succeed
 * (the schema registry being down sets `retriable`). A Kafka client error (a numeric code) is not one:
 * the transaction classifies those (runtime/transaction/kafka-errors.ts).
 */
export function isTransient(e: unknown): boolean {
  if (typeof e !== 'object' || e === null) return false;
  const { retriable, code } = e as { retriable?: unknown; code?: unknown };
  if (typeof code === 'number') return false;
  return retriable === true || e instanceof RetriableError || code === 'RETRIABLE';
}
