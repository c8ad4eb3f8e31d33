// Errors a stage raises about the record in flight or its own configuration.
import { OnceflowError } from '../../errors.ts';

/**
 * A stage gave up on the current record. Internal: the task catches it, undoes the record's writes
 * and dead-letters the original input record.
 */
export class StageFailure extends OnceflowError {
  readonly code = 'STAGE_FAILED';
  constructor(
    readonly stage: string,
    readonly error: unknown,
    readonly attempts: number,
    /** Written to the `onceflow.error.code` header. */
    readonly errorCode: string,
  ) {
    super(`stage ${stage} failed after ${attempts} attempt(s): ${error instanceof Error ? error.message : String(error)}`, { cause: error });
  }
}

/** A synchronous stage returned a Promise: a topology bug, so the task stops rather than dead-lettering. */
export class AsyncStageResultError extends OnceflowError {
  readonly code = 'ASYNC_STAGE_RESULT';
  constructor(readonly stage: string, kind: string) {
    super(`stage ${stage} (${kind}) returned a Promise; ${kind} runs inside the Kafka transaction and must be synchronous. Move the async work to an effect(name, fn, { idempotencyKey }) stage`);
  }
}

/** A global-table join's table was not given to the task (TaskOptions.globalTables). */
export class UnknownGlobalTableError extends OnceflowError {
  readonly code = 'UNKNOWN_GLOBAL_TABLE';
  constructor(node: string, store: string) {
    super(`stage ${node} joins global table ${JSON.stringify(store)}, which this task was not given`);
  }
}

/** A suppression buffer at its configured bound: the record that would overflow it is dead-lettered, its updates undone. */
export class SuppressionBufferFullError extends OnceflowError {
  readonly code = 'SUPPRESSION_BUFFER_FULL';
  constructor(stage: string, held: number, bytes: number, maxRecords: number, maxBytes: number) {
    super(`suppression buffer of ${stage} is full (${held} keys, ${bytes} bytes; bounds ${maxRecords} keys, ${maxBytes} bytes): raise maxRecords/maxBytes of Suppressed, or pass whenFull: 'emit-early'`);
  }
}

/** A processor stage without a `state` option used `ctx.store`. */
export class ProcessorWithoutStoreError extends OnceflowError {
  readonly code = 'PROCESSOR_WITHOUT_STORE';
  constructor(stage: string) {
    super(`processor ${stage} has no store: pass process({ state: { key, value } }) to give it one`);
  }
}
