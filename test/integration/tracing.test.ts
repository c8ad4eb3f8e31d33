import assert from 'node:assert/strict';
import { after, test } from 'node:test';
import { OtlpReceiver, type ReceivedSpan } from '../../src/testing/otlp-receiver.ts';
import { eventually } from '../../src/verify/worker-process.ts';
import { TestRun } from '../support/runs.ts';

// A real worker running topology/orders.ts (three sub-topologies, two repartition topics) exports
// its spans over OTLP/HTTP JSON to a receiver in this process: the traces are asserted as a
// collector would receive them.

const runs: TestRun[] = [];
const receivers: OtlpReceiver[] = [];
after(async () => {
  await Promise.all(runs.map((r) => r.stopAll()));
  await Promise.all(receivers.map((r) => r.close()));
});

/** One trace as indented text, children under their parent in start order: what docs/operations.md shows. */
function spanTree(spans: readonly ReceivedSpan[], traceId: string): string {
  const inTrace = spans.filter((s) => s.traceId === traceId);
  const lines: string[] = [];
  const visit = (span: ReceivedSpan, depth: number): void => {
    const attributes = ['onceflow.transaction.outcome', 'onceflow.error.code', 'onceflow.transactional', 'messaging.destination.partition.id', 'messaging.kafka.offset'].filter((k) => span.attributes[k] !== undefined).map((k) => `${k}=${String(span.attributes[k])}`);
    lines.push(`${'  '.repeat(depth)}${span.name}${attributes.length > 0 ? ` [${attributes.join(' ')}]` : ''}${span.links.length > 0 ? ` (links ${span.links.length})` : ''}`);
    for (const child of inTrace.filter((s) => s.parentSpanId === span.spanId)) visit(child, depth + 1);
  };
  for (const root of inTrace.filter((s) => s.parentSpanId === undefined || !inTrace.some((p) => p.spanId === s.parentSpanId))) visit(root, 0);
  return lines.join('\n');
}

test('orders on the real broker: a record\'s three sub-topologies are one trace, its commit has a span with the outcome, a poison record a dead-letter span', async () => {
  const receiver = await OtlpReceiver.start();
  receivers.push(receiver);
  const r = new TestRun('orders', 2, {
    OTEL_TRACES_EXPORTER: 'otlp',
    OTEL_EXPORTER_OTLP_ENDPOINT: receiver.endpoint,
    OTEL_EXPORTER_OTLP_PROTOCOL: 'http/json',
    OTEL_TRACES_SAMPLER: 'parentbased_traceidratio',
    OTEL_TRACES_SAMPLER_ARG: '1',
    OTEL_SERVICE_NAME: 'orders-under-test',
    // Exported every 200 ms instead of every 5 s: the test waits for what arrives.
    OTEL_BSP_SCHEDULE_DELAY: '200',
  });
  runs.push(r);
  await r.createTopics();
  await r.produce(300, 42, 2);
  r.startWorker('a');
  await r.caughtUp();
  const { repartition, deadLetter } = await r.internalTopics();
  assert.equal(repartition.length, 2, 'orders repartitions twice');
  const byId = (id: string | undefined): ReceivedSpan | undefined => receiver.spans.find((s) => s.spanId === id);
  const commitOf = (span: ReceivedSpan): ReceivedSpan | undefined =>
    receiver.spans.find((c) => c.name === 'onceflow.transaction.commit' && (c.parentSpanId === span.spanId || c.links.some((l) => l.spanId === span.spanId)));
  // The aggregate's sub-topology reads the second repartition topic; its spans lead back through the first to
  // the input. Spans arrive in several export requests, so the wait is for a chain whose commits arrived too.
  const lastHop = (): ReceivedSpan | undefined =>
    receiver.spans.find((s) => {
      if (!repartition.some((topic) => s.name === `process ${topic}`)) return false;
      const middle = byId(s.parentSpanId);
      const start = byId(middle?.parentSpanId);
      return middle !== undefined && middle.name !== s.name && repartition.some((topic) => middle.name === `process ${topic}`) && start?.name === `process ${r.input}` && [s, middle, start].every((hop) => commitOf(hop) !== undefined);
    });
  await eventually(() => lastHop() !== undefined && receiver.spans.some((s) => s.name === `dead-letter ${deadLetter}`), 120_000, 'a record traced through both repartitions with its commits, and a dead-letter span');

  const third = lastHop()!;
  const second = byId(third.parentSpanId)!;
  const first = byId(second.parentSpanId)!;
  assert.equal(new Set([first.traceId, second.traceId, third.traceId]).size, 1, 'one trace across the three sub-topologies');
  assert.equal(first.parentSpanId, undefined, 'the input record carried no traceparent: its trace starts at its first sub-topology');
  assert.equal(first.service, 'orders-under-test');
  for (const span of [first, second, third]) {
    assert.equal(span.kind, 5, `${span.name} is a consumer span`);
    assert.equal(span.attributes['messaging.system'], 'kafka');
    assert.equal(span.attributes['onceflow.transaction.outcome'], 'committed', `${span.name}: what the record emitted was committed`);
  }

  // Each hop's transaction commit: a span whose parent or links name the record's span, with its outcome.
  for (const span of [first, second, third]) {
    const commit = commitOf(span);
    assert.ok(commit, `a commit span for ${span.name}`);
    assert.equal(commit.attributes['onceflow.transaction.outcome'], 'committed');
    assert.ok(Number(commit.attributes['onceflow.transaction.records']) >= 1);
  }

  const dead = receiver.spans.find((s) => s.name === `dead-letter ${deadLetter}`)!;
  assert.equal(dead.attributes['onceflow.error.code'], 'JSON_INVALID');
  assert.equal(dead.status, 2, 'a dead letter is an error');
  assert.equal(byId(dead.parentSpanId)?.name, `process ${r.input}`, 'under the poison record\'s own span');

  // Printed for docs/operations.md, which shows a trace from a real run.
  console.log(`one record of orders, as a trace:\n${spanTree(receiver.spans, third.traceId)}`);
  console.log(`a poison record:\n${spanTree(receiver.spans, dead.traceId)}`);
});
