import { OnceflowError } from '../errors.ts';
import { PermanentError, RetriableError } from '../core/stage-errors.ts';

/**
 * Errors raised by effect implementations. They subclass the runtime's RetriableError /
 * PermanentError so that an effect stage which lets them escape gets the engine's behaviour
 * (retry with backoff, or dead-letter at once) without the user mapping them.
 */
export type EffectErrorCode =
  | 'EFFECT_DB_TRANSIENT'
  | 'EFFECT_DB_REJECTED'
  | 'EFFECT_HTTP_TRANSIENT'
  | 'EFFECT_HTTP_REJECTED'
  | 'EFFECT_CONFIG'
  | 'OUTBOX_PUBLISH_FAILED';

/** Trying again may succeed: the database or endpoint was unavailable, or a lock conflict lost. */
export class EffectRetriableError extends RetriableError {
  declare readonly code: 'EFFECT_DB_TRANSIENT' | 'EFFECT_HTTP_TRANSIENT';
  constructor(
    code: 'EFFECT_DB_TRANSIENT' | 'EFFECT_HTTP_TRANSIENT',
    message: string,
    readonly detail: EffectErrorDetail,
    cause?: unknown,
  ) {
    super(message, { code, cause });
  }
}

/** The same input will fail the same way: a constraint, bad data, a 4xx. Dead-letter it. */
export class EffectPermanentError extends PermanentError {
  declare readonly code: 'EFFECT_DB_REJECTED' | 'EFFECT_HTTP_REJECTED';
  constructor(
    code: 'EFFECT_DB_REJECTED' | 'EFFECT_HTTP_REJECTED',
    message: string,
    readonly detail: EffectErrorDetail,
    cause?: unknown,
  ) {
    super(message, { code, cause });
  }
}

export interface EffectErrorDetail {
  /** PostgreSQL SQLSTATE, or a Node network code such as ECONNREFUSED. */
  readonly sqlState?: string;
  readonly networkCode?: string;
  readonly status?: number;
  readonly attempts?: number;
}

/** A table or column name that cannot be used safely in generated SQL; a programming error. */
export class EffectConfigError extends OnceflowError {
  readonly code = 'EFFECT_CONFIG';
}

/** The broker did not acknowledge every record of an outbox batch; the rows stay pending. */
export class OutboxPublishError extends OnceflowError {
  readonly code = 'OUTBOX_PUBLISH_FAILED';
  constructor(
    message: string,
    readonly failedEventIds: readonly string[],
    cause?: unknown,
  ) {
    super(message, cause === undefined ? undefined : { cause });
  }
}

export function isEffectError(e: unknown): e is EffectRetriableError | EffectPermanentError {
  return e instanceof EffectRetriableError || e instanceof EffectPermanentError;
}

/** Network failures: the request may or may not have reached the other side, so a retry is the only move. */
const TRANSIENT_NETWORK = new Set(['ECONNREFUSED', 'ECONNRESET', 'ETIMEDOUT', 'EPIPE', 'EHOSTUNREACH', 'ENETUNREACH', 'EAI_AGAIN', 'ECONNABORTED', 'UND_ERR_SOCKET', 'UND_ERR_CONNECT_TIMEOUT', 'UND_ERR_HEADERS_TIMEOUT', 'UND_ERR_BODY_TIMEOUT']);

/**
 * SQLSTATEs where the transaction was rolled back for reasons unrelated to the input:
 * lost a serialization or deadlock race, the server is restarting or overloaded, the statement
 * was cancelled (statement_timeout), the connection broke.
 */
const TRANSIENT_SQLSTATE = new Set(['40001', '40P01', '55P03', '57014', '57P01', '57P02', '57P03', '53300', '53400', '58000', '58030']);

/** Node network code carried by `e` or by any error in its cause chain. */
export function networkCode(e: unknown): string | undefined {
  for (let link: unknown = e, depth = 0; link !== null && typeof link === 'object' && depth < 5; link = (link as { cause?: unknown }).cause, depth++) {
    const code = (link as { code?: unknown }).code;
    if (typeof code === 'string' && TRANSIENT_NETWORK.has(code)) return code;
    const errors = (link as { errors?: unknown }).errors;
    // `connect` to a host with several addresses fails with an AggregateError of per-address errors.
    if (Array.isArray(errors)) for (const inner of errors) {
      const c = networkCode(inner);
      if (c) return c;
    }
  }
  return undefined;
}

function sqlState(e: unknown): string | undefined {
  const code = typeof e === 'object' && e !== null ? (e as { code?: unknown }).code : undefined;
  return typeof code === 'string' && /^[0-9A-Z]{5}$/.test(code) ? code : undefined;
}

/** pg's own messages for a connection that died or never came up carry no code. */
const PG_CONNECTION_MESSAGES = [/Connection terminated/i, /timeout exceeded when trying to connect/i, /Client has encountered a connection error/i, /Connection terminated unexpectedly/i];

/**
 * The one place database failures become effect errors. Errors that are neither a SQLSTATE nor a
 * broken connection (a bug in the caller's callback, say) pass through unchanged, as do errors
 * the caller already classified.
 */
export function classifyPgError(e: unknown, what: string): unknown {
  if (e instanceof OnceflowError) return e;
  const state = sqlState(e);
  const message = e instanceof Error ? e.message : String(e);
  if (state !== undefined) {
    // Class 08 is "connection exception" as a whole.
    if (TRANSIENT_SQLSTATE.has(state) || state.startsWith('08')) {
      return new EffectRetriableError('EFFECT_DB_TRANSIENT', `${what}: transient database error ${state}: ${message}`, { sqlState: state }, e);
    }
    return new EffectPermanentError('EFFECT_DB_REJECTED', `${what}: database rejected the write (${state}): ${message}`, { sqlState: state }, e);
  }
  const net = networkCode(e);
  if (net !== undefined) {
    return new EffectRetriableError('EFFECT_DB_TRANSIENT', `${what}: database unreachable (${net}): ${message}`, { networkCode: net }, e);
  }
  if (PG_CONNECTION_MESSAGES.some((re) => re.test(message))) {
    return new EffectRetriableError('EFFECT_DB_TRANSIENT', `${what}: database connection lost: ${message}`, {}, e);
  }
  return e;
}

/** HTTP outcome → error; 408 and 429 are the 4xx that mean "later", not "never". */
export function httpStatusError(status: number, method: string, url: string, attempts: number, body: string): EffectRetriableError | EffectPermanentError | undefined {
  if (status < 400) return undefined;
  const snippet = body.length > 200 ? `${body.slice(0, 200)}…` : body;
  const message = `${method} ${url} answered ${status} after ${attempts} attempt(s)${snippet ? `: ${snippet}` : ''}`;
  if (status >= 500 || status === 408 || status === 429) return new EffectRetriableError('EFFECT_HTTP_TRANSIENT', message, { status, attempts });
  return new EffectPermanentError('EFFECT_HTTP_REJECTED', message, { status, attempts });
}

export function httpNetworkError(e: unknown, method: string, url: string, attempts: number): EffectRetriableError {
  const net = networkCode(e);
  const timeout = e instanceof Error && (e.name === 'TimeoutError' || e.name === 'AbortError');
  const reason = timeout ? 'timed out' : net ? `network error ${net}` : `network error: ${e instanceof Error ? (e.cause instanceof Error ? e.cause.message : e.message) : String(e)}`;
  return new EffectRetriableError('EFFECT_HTTP_TRANSIENT', `${method} ${url} ${reason} after ${attempts} attempt(s)`, { ...(net ? { networkCode: net } : {}), attempts }, e);
}
