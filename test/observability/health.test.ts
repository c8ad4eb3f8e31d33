import assert from 'node:assert/strict';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { test } from 'node:test';
import { ObservabilityServerError } from '../../src/observability/errors.ts';
import { startObservability } from '../../src/observability/health.ts';
import { FakeWorker } from './fake-worker.ts';

async function get(port: number, path: string): Promise<{ status: number; body: string; type: string }> {
  const res = await fetch(`http://127.0.0.1:${port}${path}`);
  return { status: res.status, body: await res.text(), type: res.headers.get('content-type') ?? '' };
}

test('readyz follows assignment, revocation, the DLQ rate and a fatal end; healthz only the fatal end', async () => {
  let now = 1_000_000;
  const w = new FakeWorker({ kafka: { 'sasl.password': 'pw-in-config-9f3a' } });
  const obs = await startObservability(w, { port: 0, host: '127.0.0.1', processMetrics: false, dlqThreshold: { count: 3, intervalMs: 60_000 }, now: () => now });
  try {
    assert.equal((await get(obs.port, '/healthz')).status, 200);
    let r = await get(obs.port, '/readyz');
    assert.equal(r.status, 503);
    assert.equal(JSON.parse(r.body).reason, 'starting');

    w.send({ type: 'started', transactionalId: w.transactionalId });
    r = await get(obs.port, '/readyz');
    assert.equal(r.status, 503);
    assert.match(JSON.parse(r.body).reason, /no partitions assigned/);

    w.send({ type: 'restored', records: 10, ms: 5 });
    w.send({ type: 'assigned', partitions: ['orders-0', 'orders-1'] });
    r = await get(obs.port, '/readyz');
    assert.equal(r.status, 200);
    assert.deepEqual(JSON.parse(r.body), { status: 'ok', ok: true, partitions: 2 });

    // Below the threshold: still ready. At it: not ready, with the numbers.
    const dlq = { type: 'dead-lettered', stage: 'parse', code: 'DESERIALIZE_FAILED', topic: 'orders', partition: 0, offset: 1 } as const;
    w.send(dlq);
    w.send(dlq);
    assert.equal((await get(obs.port, '/readyz')).status, 200);
    w.send(dlq);
    r = await get(obs.port, '/readyz');
    assert.equal(r.status, 503);
    assert.equal(r.type, 'application/json');
    assert.deepEqual(JSON.parse(r.body), { status: 'unavailable', ok: false, reason: 'dead-letter rate', detail: { deadLettered: 3, threshold: 3, intervalMs: 60_000 } });
    assert.equal((await get(obs.port, '/healthz')).status, 200, 'a DLQ burst is not a reason to restart');

    // The interval passes without new dead letters: ready again.
    now += 60_001;
    assert.equal((await get(obs.port, '/readyz')).status, 200);

    w.send({ type: 'revoked', partitions: ['orders-0'], lost: false });
    assert.equal(JSON.parse((await get(obs.port, '/readyz')).body).partitions, 1);
    w.send({ type: 'revoked', partitions: ['orders-1'], lost: true });
    assert.equal((await get(obs.port, '/readyz')).status, 503);

    const m = await get(obs.port, '/metrics');
    assert.equal(m.status, 200);
    assert.match(m.type, /^text\/plain/);
    assert.match(m.body, /onceflow_dlq_records_total\{stage="parse",code="DESERIALIZE_FAILED",app="orders"\} 3/);

    const err = Object.assign(new Error('fenced 4 times; client config had sasl.password=pw-in-config-9f3a'), { code: 'DUPLICATE_INSTANCE_ID' });
    w.die(err);
    await new Promise((resolve) => setImmediate(resolve));
    const h = await get(obs.port, '/healthz');
    assert.equal(h.status, 503);
    assert.equal(JSON.parse(h.body).reason, 'fatal');
    assert.match(JSON.parse(h.body).detail.error, /DUPLICATE_INSTANCE_ID/);
    assert.doesNotMatch(h.body, /pw-in-config-9f3a/);
    assert.equal((await get(obs.port, '/readyz')).status, 503);
    assert.equal((await get(obs.port, '/nope')).status, 404);
  } finally {
    await obs.close();
  }
});

test('a clean stop is not fatal: alive, not ready', async () => {
  const w = new FakeWorker();
  const obs = await startObservability(w, { port: 0, host: '127.0.0.1', processMetrics: false });
  try {
    w.send({ type: 'started', transactionalId: w.transactionalId });
    w.send({ type: 'assigned', partitions: ['orders-0'] });
    w.send({ type: 'stopped' });
    await new Promise((resolve) => setImmediate(resolve));
    assert.equal((await get(obs.port, '/healthz')).status, 200);
    const r = await get(obs.port, '/readyz');
    assert.equal(r.status, 503);
    assert.equal(JSON.parse(r.body).reason, 'stopped');
  } finally {
    await obs.close();
  }
});

test('a replica may be declared ready with nothing assigned', async () => {
  const w = new FakeWorker();
  const obs = await startObservability(w, { port: 0, host: '127.0.0.1', processMetrics: false, readyWithoutPartitions: true });
  try {
    w.send({ type: 'started', transactionalId: w.transactionalId });
    assert.equal((await get(obs.port, '/readyz')).status, 200);
  } finally {
    await obs.close();
  }
});

test('a port in use is an ObservabilityServerError naming the port', async () => {
  const blocker = createServer();
  await new Promise<void>((resolve) => blocker.listen(0, '127.0.0.1', resolve));
  const port = (blocker.address() as AddressInfo).port;
  try {
    await assert.rejects(startObservability(new FakeWorker(), { port, host: '127.0.0.1', processMetrics: false }), (e: unknown) => {
      assert.ok(e instanceof ObservabilityServerError);
      assert.equal(e.code, 'OBSERVABILITY_LISTEN_FAILED');
      assert.equal(e.port, port);
      assert.match(e.message, new RegExp(`port ${port}.*EADDRINUSE`));
      return true;
    });
  } finally {
    await new Promise((resolve) => blocker.close(resolve));
  }
});

test('the probes report the worker lifecycle state: stopping is not ready, a failed loop is not alive', async () => {
  const w = new FakeWorker();
  const obs = await startObservability(w, { port: 0, host: '127.0.0.1', processMetrics: false });
  try {
    w.state = 'RUNNING';
    w.send({ type: 'started', transactionalId: w.transactionalId });
    w.send({ type: 'assigned', partitions: ['orders-0'] });
    let r = await get(obs.port, '/readyz');
    assert.deepEqual(JSON.parse(r.body), { status: 'ok', ok: true, partitions: 1, workerState: 'RUNNING' });
    w.state = 'PENDING_SHUTDOWN';
    r = await get(obs.port, '/readyz');
    assert.equal(r.status, 503);
    assert.equal(JSON.parse(r.body).reason, 'stopping');
    assert.equal((await get(obs.port, '/healthz')).status, 200);
    w.state = 'FAILED';
    r = await get(obs.port, '/healthz');
    assert.equal(r.status, 503);
    assert.equal(JSON.parse(r.body).reason, 'fatal');
  } finally {
    await obs.close();
  }
});
