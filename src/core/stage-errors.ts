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
