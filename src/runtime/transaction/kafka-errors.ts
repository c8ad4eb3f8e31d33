import type { LibrdKafkaError } from '@confluentinc/kafka-javascript';
import { ERR, isKafkaError } from '../../kafka/clients.ts';

// Every decision the runtime takes on a librdkafka error is made here, so that the loop, the
// transaction and the rebalance handling cannot disagree on what an error means.


/**
 * How the worker reacts to a failed transactional call. Decided from librdkafka's own flags and codes:
 * the KafkaJS-compatible layer's `retriable`/`fatal`/`abortable` flags are not reliable here.
 */
export type TxnFailure = 'abortable' | 'fatal' | 'retriable' | 'unknown';

const FENCING_CODES = new Set([ERR.ERR__FENCED, ERR.ERR_PRODUCER_FENCED, ERR.ERR_INVALID_PRODUCER_EPOCH, ERR.ERR_TRANSACTIONAL_ID_AUTHORIZATION_FAILED]);
/**
 * The group no longer counts this member as the partitions' owner: under the classic protocol a stale
 * generation, under the consumer protocol (KIP-848) a stale or fenced member epoch. The offsets are
 * refused, so the transaction is aborted and the rebalance that follows hands the partitions on.
 */
const REBALANCE_CODES = new Set([ERR.ERR_ILLEGAL_GENERATION, ERR.ERR_UNKNOWN_MEMBER_ID, ERR.ERR_REBALANCE_IN_PROGRESS, ERR.ERR_FENCED_INSTANCE_ID, ERR.ERR_STALE_MEMBER_EPOCH, ERR.ERR_FENCED_MEMBER_EPOCH]);

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

/** Another producer took this transactional id, or the producer cannot go on: it must be replaced. */
export function isFatalOrFencing(e: unknown): boolean {
  return classifyTxnError(e) === 'fatal' || isFencing(e);
}

export function isTransactionalIdUnauthorized(e: unknown): boolean {
  return isKafkaError(e) && e.code === ERR.ERR_TRANSACTIONAL_ID_AUTHORIZATION_FAILED;
}

/** The broker refused a record batch over a topic's max.message.bytes; the topic, when the message names it. */
export function recordTooLarge(e: unknown): { readonly topic: string | undefined } | undefined {
  if (!isKafkaError(e) || e.code !== ERR.ERR_MSG_SIZE_TOO_LARGE) return undefined;
  return { topic: /ProduceRequest for (\S+) \[/.exec(e.message)?.[1] };
}

/** A consume that found nothing: not an error for the loop. */
export function isEmptyFetch(e: LibrdKafkaError): boolean {
  return e.code === ERR.ERR__TIMED_OUT || e.code === ERR.ERR__PARTITION_EOF;
}

/** The rebalance callback's code for "these partitions are yours" (anything else hands them back). */
export function isAssignment(e: LibrdKafkaError): boolean {
  return e.code === ERR.ERR__ASSIGN_PARTITIONS;
}

export function describeKafkaError(e: unknown): string {
  if (!isKafkaError(e)) return e instanceof Error ? e.message : String(e);
  return `${e.message} (librdkafka code ${e.code}${e.isFatal ? ', fatal' : ''}${e.isTxnRequiresAbort ? ', requires abort' : ''}${e.isRetriable ? ', retriable' : ''})`;
}
