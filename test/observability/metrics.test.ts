import assert from 'node:assert/strict';
import { test } from 'node:test';
import { register as globalRegistry } from 'prom-client';
import { attachMetrics } from '../../src/observability/metrics.ts';
import { FakeWorker } from './fake-worker.ts';

/** The value of one series in the text exposition, found by its full name and labels. */
function value(text: string, series: string): number | undefined {
  const line = text.split('\n').find((l) => l.startsWith(`${series} `));
  return line === undefined ? undefined : Number(line.slice(series.length + 1));
}

test('counters follow worker.stats, histograms and DLQ labels follow events', async () => {
  const w = new FakeWorker();
  const m = attachMetrics(w, { app: 'orders', processMetrics: false });
  Object.assign(w.stats, { recordsConsumed: 120, recordsProduced: 130, transactionsCommitted: 3, transactionsAborted: 1, rebalances: 2, fencings: 1, tasks: 4, restoredRecords: 55, lateRecordsDropped: 6, duplicatesDropped: 7, staleVersionsDropped: 8 });
  w.send({ type: 'committed', records: 100, ms: 12 });
  w.send({ type: 'committed', records: 20, ms: 3 });
  w.send({ type: 'dead-lettered', stage: 'parse', code: 'DESERIALIZE_FAILED', topic: 'orders', partition: 0, offset: 7 });
  w.send({ type: 'dead-lettered', stage: 'parse', code: 'DESERIALIZE_FAILED', topic: 'orders', partition: 1, offset: 9 });
  w.send({ type: 'dead-lettered', stage: 'enrich', code: 'HANDLER_THREW', topic: 'orders', partition: 1, offset: 10 });
  let text = await m.metrics();
  assert.equal(value(text, 'onceflow_records_consumed_total{app="orders"}'), 120);
  assert.equal(value(text, 'onceflow_records_produced_total{app="orders"}'), 130);
  assert.equal(value(text, 'onceflow_transactions_committed_total{app="orders"}'), 3);
  assert.equal(value(text, 'onceflow_transactions_aborted_total{app="orders"}'), 1);
  assert.equal(value(text, 'onceflow_rebalances_total{app="orders"}'), 2);
  assert.equal(value(text, 'onceflow_fencing_events_total{app="orders"}'), 1);
  assert.equal(value(text, 'onceflow_restore_records_total{app="orders"}'), 55);
  assert.equal(value(text, 'onceflow_tasks_assigned{app="orders"}'), 4);
  assert.equal(value(text, 'onceflow_late_records_dropped_total{app="orders"}'), 6);
  assert.equal(value(text, 'onceflow_duplicates_dropped_total{app="orders"}'), 7);
  assert.equal(value(text, 'onceflow_stale_versions_dropped_total{app="orders"}'), 8);
  assert.equal(value(text, 'onceflow_commit_latency_seconds_count{app="orders"}'), 2);
  assert.equal(value(text, 'onceflow_commit_latency_seconds_sum{app="orders"}'), 0.015);
  assert.equal(value(text, 'onceflow_records_per_transaction_sum{app="orders"}'), 120);
  assert.equal(value(text, 'onceflow_records_per_transaction_bucket{le="100",app="orders"}'), 2);
  assert.equal(value(text, 'onceflow_records_per_transaction_bucket{le="10",app="orders"}'), 0);
  assert.equal(value(text, 'onceflow_dlq_records_total{stage="parse",code="DESERIALIZE_FAILED",app="orders"}'), 2);
  assert.equal(value(text, 'onceflow_dlq_records_total{stage="enrich",code="HANDLER_THREW",app="orders"}'), 1);

  // A second scrape adds only what happened since the first.
  w.stats.recordsConsumed = 150;
  w.stats.tasks = 2;
  text = await m.metrics();
  assert.equal(value(text, 'onceflow_records_consumed_total{app="orders"}'), 150);
  assert.equal(value(text, 'onceflow_tasks_assigned{app="orders"}'), 2);
  m.detach();
});

test('each worker has its own registry and the global default registry stays empty', async () => {
  const a = attachMetrics(new FakeWorker({ appId: 'a' }));
  const b = attachMetrics(new FakeWorker({ appId: 'b' }));
  assert.notEqual(a.registry, b.registry);
  const text = await a.metrics();
  assert.match(text, /onceflow_records_consumed_total\{app="a"\} 0/);
  assert.doesNotMatch(text, /app="b"/);
  // process metrics are there, prefixed
  assert.match(text, /^onceflow_process_resident_memory_bytes\{app="a"\} \d+/m);
  assert.match(text, /^onceflow_nodejs_eventloop_lag_seconds\{app="a"\} /m);
  assert.equal((await globalRegistry.getMetricsAsJSON()).filter((m) => m.name.startsWith('onceflow_')).length, 0);
  a.detach();
  b.detach();
});

test('lag and per-topic providers become labelled gauges, refreshed on each scrape', async () => {
  const w = new FakeWorker();
  let lag = [
    { topic: 'orders', partition: 0, lag: 5 },
    { topic: 'orders', partition: 1, lag: 0 },
  ];
  const m = attachMetrics(w, {
    processMetrics: false,
    lag: async () => lag,
    topicRecords: () => [{ topic: 'orders', consumed: 10, produced: 0 }, { topic: 'customer-totals', consumed: 0, produced: 8 }],
  });
  let text = await m.metrics();
  assert.equal(value(text, 'onceflow_consumer_lag{topic="orders",partition="0",app="orders"}'), 5);
  assert.equal(value(text, 'onceflow_consumer_lag{topic="orders",partition="1",app="orders"}'), 0);
  assert.equal(value(text, 'onceflow_topic_records_produced{topic="customer-totals",app="orders"}'), 8);
  // A partition handed to another replica disappears instead of reporting a stale lag.
  lag = [{ topic: 'orders', partition: 1, lag: 3 }];
  text = await m.metrics();
  assert.equal(value(text, 'onceflow_consumer_lag{topic="orders",partition="0",app="orders"}'), undefined);
  assert.equal(value(text, 'onceflow_consumer_lag{topic="orders",partition="1",app="orders"}'), 3);
  m.detach();
});

test('without providers there are no lag series at all', async () => {
  const m = attachMetrics(new FakeWorker(), { processMetrics: false });
  assert.doesNotMatch(await m.metrics(), /onceflow_consumer_lag/);
  m.detach();
});
