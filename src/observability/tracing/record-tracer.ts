import { ROOT_CONTEXT, SpanKind, SpanStatusCode, TraceFlags, trace, type Attributes, type Link, type Span, type Tracer } from '@opentelemetry/api';
import { DEAD_LETTER, lineagePrefix } from '../../core/headers.ts';
import type { OutgoingRecord } from '../../core/records.ts';
import type { CommitSpan, EffectSpan, RecordTracer, TracedInput, TracedOrigin, TransactionOutcome } from './port.ts';
import { contextOf, traceHeadersOf, withTraceContext } from './trace-headers.ts';

/** Span and attribute names: what a trace backend shows and a query filters on. */
export const SPAN = {
  commit: 'onceflow.transaction.commit',
  outcome: 'onceflow.transaction.outcome',
  records: 'onceflow.transaction.records',
  transactional: 'onceflow.transactional',
  lineage: 'onceflow.lineage',
  stage: 'onceflow.stage',
  linksDropped: 'onceflow.transaction.links_dropped',
} as const;

/**
 * A commit span links the record spans of its transaction, up to this many: a transaction holds up to
 * maxRecordsPerTransaction records (20,000 by default), and a span with that many links is a burden
 * to every backend that stores it. The count left out is an attribute.
 */
export const COMMIT_LINK_LIMIT = 1_000;

/**
 * The tracer behind the port (port.ts), over an OpenTelemetry Tracer. A record gets its span on the
 * main thread when its first output is resolved (or its effect called), wherever its stages ran: the
 * processing threads need no tracer of their own, and what they send back already names its input
 * record. A record that emits nothing (a filter dropped it, an aggregate folded it into a later
 * result) has no span. Record spans stay open until their transaction ends, so each says whether
 * what it emitted was committed.
 */
export class OtelRecordTracer implements RecordTracer {
  /** The open transaction's record spans, by the lineage prefix of their record (core/headers.ts): unique per record, and what every output's lineage starts with. */
  readonly #open = new Map<string, Span>();

  constructor(
    private readonly tracer: Tracer,
    private readonly flushAndStop: () => Promise<void>,
  ) {}

  traced(record: OutgoingRecord, lineage: string, origin: TracedOrigin, deadLetter: boolean): OutgoingRecord {
    const span = this.#recordSpan(recordKeyOf(lineage), origin, record.headers);
    if (span.isRecording()) span.addEvent('send', { 'messaging.destination.name': record.topic, [SPAN.lineage]: lineage });
    const carrier = deadLetter ? this.#deadLetterSpan(span, record) : span;
    return { ...record, headers: withTraceContext(record.headers, carrier) };
  }

  commitStarted(records: number): CommitSpan {
    const startTime = Date.now();
    return {
      end: (outcome) => {
        const links: Link[] = [];
        let sampled = 0;
        for (const span of this.#open.values()) {
          const context = span.spanContext();
          if ((context.traceFlags & TraceFlags.SAMPLED) === 0) continue;
          sampled++;
          if (links.length < COMMIT_LINK_LIMIT) links.push({ context });
        }
        // Under the first sampled record's span, so the commit is sampled with it and shows in its trace; linked to the rest.
        const first = links[0];
        const parent = first === undefined ? ROOT_CONTEXT : trace.setSpanContext(ROOT_CONTEXT, first.context);
        const attributes: Attributes = { [SPAN.outcome]: outcome, [SPAN.records]: records };
        if (sampled > links.length) attributes[SPAN.linksDropped] = sampled - links.length;
        const span = this.tracer.startSpan(SPAN.commit, { kind: SpanKind.INTERNAL, startTime, links, attributes }, parent);
        if (outcome !== 'committed') span.setStatus({ code: SpanStatusCode.ERROR, message: `transaction ${outcome}` });
        span.end();
        this.#endRecords(outcome);
      },
    };
  }

  rolledBack(): void {
    this.#endRecords('aborted');
  }

  effectStarted(stage: string, input: TracedInput): EffectSpan {
    const parent = this.#recordSpan(lineagePrefix(input), input, input.headers);
    const span = this.tracer.startSpan(
      `effect ${stage}`,
      // Outside the transaction: an abort does not undo the call, a replay makes it again.
      { kind: SpanKind.CLIENT, attributes: { [SPAN.stage]: stage, [SPAN.transactional]: false } },
      trace.setSpan(ROOT_CONTEXT, parent),
    );
    return {
      traceparent: traceHeadersOf(span).traceparent ?? '',
      end: (error) => {
        if (error !== undefined) {
          span.recordException(error instanceof Error ? error : String(error));
          span.setStatus({ code: SpanStatusCode.ERROR, message: error instanceof Error ? error.message : String(error) });
        }
        span.end();
      },
    };
  }

  async shutdown(): Promise<void> {
    this.#endRecords('aborted');
    await this.flushAndStop();
  }

  #recordSpan(key: string, origin: TracedOrigin, headers: OutgoingRecord['headers']): Span {
    let span = this.#open.get(key);
    if (span === undefined) {
      span = this.tracer.startSpan(`process ${origin.topic}`, { kind: SpanKind.CONSUMER }, contextOf(headers));
      // Set after the sampler's decision: at a low ratio most records are not sampled, and their spans take none.
      if (span.isRecording()) {
        span.setAttributes({
          'messaging.system': 'kafka',
          'messaging.operation.type': 'process',
          'messaging.destination.name': origin.topic,
          'messaging.destination.partition.id': String(origin.partition),
          'messaging.kafka.offset': origin.offset,
          [SPAN.lineage]: key,
        });
      }
      this.#open.set(key, span);
    }
    return span;
  }

  /** The dead letter's own span, under its record's: what `dlq replay` republishes continues from it. */
  #deadLetterSpan(recordSpan: Span, record: OutgoingRecord): Span {
    const header = (name: string): string => record.headers?.find((h) => h.key === name)?.value.toString() ?? 'unknown';
    const code = header(DEAD_LETTER.code);
    const span = this.tracer.startSpan(
      `dead-letter ${record.topic}`,
      {
        kind: SpanKind.PRODUCER,
        attributes: { 'messaging.system': 'kafka', 'messaging.destination.name': record.topic, 'onceflow.error.code': code, [SPAN.stage]: header(DEAD_LETTER.stage), [SPAN.transactional]: true },
      },
      trace.setSpan(ROOT_CONTEXT, recordSpan),
    );
    span.setStatus({ code: SpanStatusCode.ERROR, message: code });
    span.end();
    return span;
  }

  #endRecords(outcome: TransactionOutcome): void {
    for (const span of this.#open.values()) {
      span.setAttribute(SPAN.outcome, outcome);
      span.end();
    }
    this.#open.clear();
  }
}

/** The lineage prefix of the record an output stands for: its lineage without the last hop number. */
export function recordKeyOf(lineage: string): string {
  return lineage.slice(0, Math.max(lineage.lastIndexOf('.'), lineage.lastIndexOf('#')) + 1);
}
