import assert from 'node:assert/strict';
import { once } from 'node:events';
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { after, before, beforeEach, test } from 'node:test';
import { EffectPermanentError, EffectRetriableError } from '../../src/effects/errors.ts';
import { backoffMs, DEFAULT_HTTP_RETRY, httpEffect } from '../../src/effects/http.ts';
import { PermanentError, RetriableError } from '../../src/core/stage-errors.ts';

/**
 * A payment-like endpoint that dedupes on Idempotency-Key: the first request with a key applies
 * the charge and stores the response; later ones get the stored response without a new charge.
 * `script` decides, per request, to fail first (status, dropped socket, or a slow answer).
 */
type Step = { kind: 'status'; status: number; retryAfter?: string } | { kind: 'drop' } | { kind: 'slow'; ms: number };
const state = { calls: 0, charges: new Map<string, number>(), stored: new Map<string, string>(), keys: [] as (string | undefined)[], script: [] as Step[] };
let url = '';
const server = createServer(async (req: IncomingMessage, res: ServerResponse) => {
  state.calls++;
  const key = req.headers['idempotency-key'];
  state.keys.push(typeof key === 'string' ? key : undefined);
  let body = '';
  for await (const chunk of req) body += String(chunk);
  const step = state.script.shift();
  if (step?.kind === 'drop') {
    req.socket.destroy();
    return;
  }
  if (step?.kind === 'status') {
    res.writeHead(step.status, step.retryAfter ? { 'retry-after': step.retryAfter } : {}).end(`scripted ${step.status}`);
    return;
  }
  if (typeof key !== 'string') {
    res.writeHead(400).end('missing Idempotency-Key');
    return;
  }
  // The charge happens before a slow answer: a client that times out has already been charged.
  const stored = state.stored.get(key);
  if (stored === undefined) {
    state.charges.set(key, (state.charges.get(key) ?? 0) + 1);
    state.stored.set(key, JSON.stringify({ charged: JSON.parse(body || 'null'), id: `ch-${state.stored.size + 1}` }));
  }
  if (step?.kind === 'slow') await new Promise((r) => setTimeout(r, step.ms));
  if (!res.destroyed) res.writeHead(stored === undefined ? 201 : 200, { 'content-type': 'application/json' }).end(state.stored.get(key));
});

before(async () => {
  server.listen(0, '127.0.0.1');
  await once(server, 'listening');
  url = `http://127.0.0.1:${(server.address() as AddressInfo).port}/charges`;
});
after(() => new Promise<void>((r) => server.close(() => r())));
beforeEach(() => {
  Object.assign(state, { calls: 0, charges: new Map(), stored: new Map(), keys: [], script: [] });
});

const noWait = { sleep: async () => undefined };
const totalCharges = () => [...state.charges.values()].reduce((a, b) => a + b, 0);

test('the idempotency key travels in Idempotency-Key; a replay of the record is answered from the server\'s dedupe, charging once', async () => {
  const charge = httpEffect<{ amount: number }>({ url, ...noWait });
  const first = await charge('orders-0-17', { amount: 5 });
  const replay = await charge('orders-0-17', { amount: 5 });
  assert.equal(first.status, 201);
  assert.equal(replay.status, 200);
  assert.equal(replay.body, first.body);
  assert.deepEqual(state.keys, ['orders-0-17', 'orders-0-17']);
  assert.equal(state.calls, 2);
  assert.equal(totalCharges(), 1);
});

test('5xx, 429 (with Retry-After) and a dropped connection are retried with the same key', async () => {
  const waits: number[] = [];
  const charge = httpEffect<{ amount: number }>({ url, retry: { maxAttempts: 5, initialBackoffMs: 10, maxBackoffMs: 1000 }, sleep: async (ms) => void waits.push(ms), random: () => 0.5 });
  state.script = [{ kind: 'status', status: 503 }, { kind: 'drop' }, { kind: 'status', status: 429, retryAfter: '0' }];
  const r = await charge('evt-1', { amount: 9 });
  assert.equal(r.status, 201);
  assert.equal(r.attempts, 4);
  assert.deepEqual(state.keys, ['evt-1', 'evt-1', 'evt-1', 'evt-1']);
  assert.equal(totalCharges(), 1);
  // Exponential with half jitter at random() = 0.5: 10·0.75, 20·0.75, then the server's Retry-After: 0.
  assert.deepEqual(r.backoffsMs, [8, 15, 0]);
  assert.deepEqual(waits, r.backoffsMs);
});

test('a timed-out attempt that the server did apply is retried with the same key and not charged twice', async () => {
  const charge = httpEffect({ url, timeoutMs: 200, retry: { maxAttempts: 3 }, ...noWait });
  state.script = [{ kind: 'slow', ms: 1500 }];
  const r = await charge('evt-slow', { amount: 1 });
  assert.equal(r.attempts, 2);
  assert.equal(r.status, 200, 'the second attempt is answered from the stored response');
  assert.equal(state.charges.get('evt-slow'), 1);
});

test('a 4xx is a permanent error at once: one call, no retry', async () => {
  const charge = httpEffect({ url, retry: { maxAttempts: 5 }, ...noWait });
  state.script = [{ kind: 'status', status: 422 }];
  await assert.rejects(charge('evt-bad', { amount: -1 }), (e: unknown) => {
    assert.ok(e instanceof EffectPermanentError);
    assert.ok(e instanceof PermanentError);
    assert.equal(e.code, 'EFFECT_HTTP_REJECTED');
    assert.equal(e.detail.status, 422);
    assert.equal(e.detail.attempts, 1);
    return true;
  });
  assert.equal(state.calls, 1);
});

test('retries are bounded: after maxAttempts 5xx the error is retriable, carrying the last status', async () => {
  const charge = httpEffect({ url, retry: { maxAttempts: 3 }, ...noWait });
  state.script = [{ kind: 'status', status: 500 }, { kind: 'status', status: 502 }, { kind: 'status', status: 504 }, { kind: 'status', status: 500 }];
  await assert.rejects(charge('evt-down', {}), (e: unknown) => {
    assert.ok(e instanceof EffectRetriableError);
    assert.ok(e instanceof RetriableError);
    assert.equal(e.code, 'EFFECT_HTTP_TRANSIENT');
    assert.equal(e.detail.status, 504);
    assert.equal(e.detail.attempts, 3);
    return true;
  });
  assert.equal(state.calls, 3);
  assert.equal(totalCharges(), 0);
});

test('an unreachable endpoint is a retriable network error after the bounded attempts', async () => {
  const closed = createServer();
  closed.listen(0, '127.0.0.1');
  await once(closed, 'listening');
  const port = (closed.address() as AddressInfo).port;
  await new Promise<void>((r) => closed.close(() => r()));
  const charge = httpEffect({ url: `http://127.0.0.1:${port}/x`, retry: { maxAttempts: 2 }, ...noWait });
  await assert.rejects(charge('evt-x'), (e: unknown) => e instanceof EffectRetriableError && e.detail.networkCode === 'ECONNREFUSED' && e.detail.attempts === 2);
});

test('backoff doubles up to the cap and the jittered part stays within bounds', () => {
  const p = { ...DEFAULT_HTTP_RETRY, initialBackoffMs: 100, maxBackoffMs: 1000, jitter: 0.5 };
  assert.deepEqual([1, 2, 3, 4, 5, 6].map((a) => backoffMs(p, a, () => 1)), [100, 200, 400, 800, 1000, 1000]);
  assert.deepEqual([1, 2, 3, 4, 5, 6].map((a) => backoffMs(p, a, () => 0)), [50, 100, 200, 400, 500, 500]);
});
