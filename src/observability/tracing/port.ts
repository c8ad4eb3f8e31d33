// The tracer port: the one shape through which the runtime reports records, commits and effects to a
// trace. The worker holds `null` when tracing is off, so the record path pays one null check per
// output and allocates nothing; the OpenTelemetry SDK behind it is loaded only when tracing is on.
import type { OutgoingRecord } from '../../core/records.ts';

/** How a transaction ended: the commit span's and every record span's `onceflow.transaction.outcome`. */
export type TransactionOutcome = 'committed' | 'aborted' | 'fenced';

/** Where the input record an output stands for was read. */
export interface TracedOrigin {
  readonly topic: string;
  readonly partition: number;
  readonly offset: number;
}

/** The input record an effect stage calls out for, as the task holds it. */
export interface TracedInput extends TracedOrigin {
  readonly headers: OutgoingRecord['headers'];
  /** onceflow's lineage header of a record read back from a repartition topic. */
  readonly lineage?: string | undefined;
}

export interface CommitSpan {
  end(outcome: TransactionOutcome): void;
}

export interface EffectSpan {
  /** The call's span, as a W3C traceparent, for an effect that passes it on (an HTTP header). */
  readonly traceparent: string;
  end(error?: unknown): void;
}

export interface RecordTracer {
  /**
   * `record` with a `traceparent` header naming the span of the input record it stands for (made on
   * its first output, a child of the traceparent that record arrived with). `deadLetter`: the output
   * is a dead letter, which gets a span of its own under the record's.
   */
  traced(record: OutgoingRecord, lineage: string, origin: TracedOrigin, deadLetter: boolean): OutgoingRecord;
  /** The commit of the open transaction begins; every record span it holds ends with it. */
  commitStarted(records: number): CommitSpan;
  /** The open transaction was aborted outside a commit (a stage failed, a rebalance): its record spans end as aborted. */
  rolledBack(): void;
  /** An effect stage's external call for `input`, outside the transaction. */
  effectStarted(stage: string, input: TracedInput): EffectSpan;
  /** Exports what is still buffered; the tracer is not used after. */
  shutdown(): Promise<void>;
}
