// W3C trace context in Kafka record headers: read from what a record carries, written on what it
// emits. The header format is the W3C propagator's (OpenTelemetry's own), never re-implemented here.
import { ROOT_CONTEXT, trace, type Context, type Span, type TextMapGetter, type TextMapSetter } from '@opentelemetry/api';
import { W3CTraceContextPropagator } from '@opentelemetry/core';
import type { RecordHeader } from '../../core/records.ts';

export const TRACEPARENT = 'traceparent';
const TRACESTATE = 'tracestate';

const propagator = new W3CTraceContextPropagator();

const fromHeaders: TextMapGetter<readonly RecordHeader[]> = {
  keys: (headers) => headers.map((h) => h.key),
  // Kafka allows a name twice: the last value is the one a `setHeaders` stage or a producer meant.
  get: (headers, key) => {
    for (let i = headers.length - 1; i >= 0; i--) if (headers[i]!.key === key) return headers[i]!.value.toString('latin1');
    return undefined;
  },
};

const intoObject: TextMapSetter<Record<string, string>> = {
  set: (carrier, key, value) => {
    carrier[key] = value;
  },
};

/** The context a record's headers carry (a remote parent), or the root context when they carry none or a malformed one. */
export function contextOf(headers: readonly RecordHeader[] | undefined): Context {
  return headers === undefined || headers.length === 0 ? ROOT_CONTEXT : propagator.extract(ROOT_CONTEXT, headers, fromHeaders);
}

/** `span`'s context as header values: `traceparent`, and `tracestate` when it has one. */
export function traceHeadersOf(span: Span): Record<string, string> {
  const out: Record<string, string> = {};
  propagator.inject(trace.setSpan(ROOT_CONTEXT, span), out, intoObject);
  return out;
}

/** `headers` with the trace context of `span` in place of any they carried. */
export function withTraceContext(headers: readonly RecordHeader[] | undefined, span: Span): RecordHeader[] {
  const out: RecordHeader[] = [];
  for (const h of headers ?? []) if (h.key !== TRACEPARENT && h.key !== TRACESTATE) out.push(h);
  for (const [key, value] of Object.entries(traceHeadersOf(span))) out.push({ key, value: Buffer.from(value, 'latin1') });
  return out;
}
