import type { LibrdKafkaError } from '@confluentinc/kafka-javascript';
import { OnceflowError } from '../errors.ts';
import { ERR, isKafkaError } from '../kafka/clients.ts';

/**
 * How the worker reacts to a failed transactional call. Decided from librdkafka's own flags and codes:
 * the KafkaJS-compatible layer's `retriable`/`fatal`/`abortable` flags are not reliable here.
 */
export type TxnFailure = 'abortable' | 'fatal' | 'retriable' | 'unknown';

const FENCING_CODES = new Set([ERR.ERR__FENCED, ERR.ERR_PRODUCER_FENCED, ERR.ERR_INVALID_PRODUCER_EPOCH, ERR.ERR_TRANSACTIONAL_ID_AUTHORIZATION_FAILED]);
const REBALANCE_CODES = new Set([ERR.ERR_ILLEGAL_GENERATION, ERR.ERR_UNKNOWN_MEMBER_ID, ERR.ERR_REBALANCE_IN_PROGRESS, ERR.ERR_FENCED_INSTANCE_ID]);

export function classifyTxnError(e: unknown): TxnFailure {
  if (!isKafkaError(e)) return 'unknown';
  if (e.isFatal || FENCING_CODES.has(e.code)) return 'fatal';
  if (e.isTxnRequiresAbort || REBALANCE_CODES.has(e.code)) return 'abortable';
  if (e.isRetriable || e.code === ERR.ERR__TIMED_OUT || e.code === ERR.ERR_CONCURRENT_TRANSACTIONS) return 'retriable';
  return 'unknown';
}

export function isFencing(e: unknown): boolean {
  return isKafkaError(e) && (FENCING_CODES.has(e.code) || e.code === ERR.ERR__FATAL);
}

export function describeKafkaError(e: unknown): string {
  if (!isKafkaError(e)) return e instanceof Error ? e.message : String(e);
  const err = e as LibrdKafkaError;
  return `${err.message} (librdkafka code ${err.code}${err.isFatal ? ', fatal' : ''}${err.isTxnRequiresAbort ? ', requires abort' : ''}${err.isRetriable ? ', retriable' : ''})`;
}

export class WorkerError extends OnceflowError {
  constructor(
    readonly code: 'DUPLICATE_INSTANCE_ID' | 'TRANSACTIONAL_ID_NOT_AUTHORIZED' | 'RETRY_BUDGET_EXCEEDS_TIMEOUT' | 'RECORD_TOO_LARGE_FOR_TOPIC' | 'WORKER_FAILED',
    message: string,
    options?: { cause?: unknown },
  ) {
    super(message, options);
  }
}
