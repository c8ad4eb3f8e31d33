import { OnceflowError } from '../../errors.ts';

/** Why a worker stopped or refused to start; the CLI and health probes print the code. */
export class WorkerError extends OnceflowError {
  constructor(
    readonly code: 'DUPLICATE_INSTANCE_ID' | 'TRANSACTIONAL_ID_NOT_AUTHORIZED' | 'RETRY_BUDGET_EXCEEDS_TIMEOUT' | 'RECORD_TOO_LARGE_FOR_TOPIC',
    message: string,
    options?: { cause?: unknown },
  ) {
    super(message, options);
  }
}

/**
 * A call the part's current state does not allow: a bug in the runtime, never a broker condition.
 * Thrown before anything is sent, so nothing half-done is left behind it.
 */
export class IllegalTransitionError extends OnceflowError {
  readonly code = 'ILLEGAL_TRANSITION';
  constructor(
    readonly machine: string,
    readonly state: string,
    readonly call: string,
    readonly target?: string,
    why?: string,
  ) {
    super(`${machine}: ${call}() is not allowed in state ${state}${target === undefined ? '' : ` (it would move to ${target})`}${why === undefined ? '' : `: ${why}`}`);
  }
}

/**
 * A join's task was handed partition N of some of its input topics but not of the others: run, it
 * would join against a partial table. The worker stops before processing anything of it.
 */
export class SplitJoinPartitionsError extends OnceflowError {
  readonly code = 'JOIN_PARTITIONS_SPLIT';
  constructor(task: string, join: string, missing: readonly string[]) {
    super(`task ${task} runs join ${join} but was not assigned ${missing.join(', ')}: the group's assignor did not co-locate the join's partitions`);
  }
}

/**
 * A transactional call of librdkafka's that outlived its own timeout by a margin: librdkafka's
 * send_offsets_to_transaction can wait forever once the group coordinator it cached went away
 * (confluentinc/librdkafka#5456, #5511: the coordinator request's timeout is never checked). The
 * producer is then replaced, and the stuck one set aside until its call returns.
 */
export class TransactionCallStuckError extends OnceflowError {
  readonly code = 'TRANSACTION_CALL_STUCK';
  constructor(
    readonly call: string,
    readonly waitedMs: number,
  ) {
    super(`${call} did not return within ${waitedMs} ms, past its own timeout: the producer is replaced`);
  }
}
