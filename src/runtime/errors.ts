import { OnceflowError } from '../errors.ts';

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
