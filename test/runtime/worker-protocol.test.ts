import assert from 'node:assert/strict';
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { test } from 'node:test';
import { setTimeout as sleep } from 'node:timers/promises';
import { IllegalTransitionError } from '../../src/runtime/base/errors.ts';
import { noFaults } from '../../src/runtime/base/faults.ts';
import { StateMachine } from '../../src/runtime/base/state-machine.ts';
import { ExactlyOnceOutput } from '../../src/runtime/transaction/exactly-once.ts';
import { TRANSACTION_TRANSITIONS } from '../../src/runtime/transaction/states.ts';
import { Worker } from '../../src/runtime/worker/worker.ts';
import type { WorkerEvent } from '../../src/runtime/base/worker-events.ts';
import { WORKER_TRANSITIONS } from '../../src/runtime/worker/worker-state.ts';
import { copyTopology, countingTopology, errors, FakeCluster, type FakeConsumer } from './fake-kafka.ts';

// The worker's protocol against an in-memory broker (fake-kafka.ts): what it does after each kind of
// failure, in which order, and that the committed output holds every input exactly once.

interface Harness<T = ReturnType<typeof countingTopology>> {
  readonly cluster: FakeCluster;
  readonly worker: Worker;
  readonly topology: T;
  readonly events: WorkerEvent[];
  readonly consumer: FakeConsumer;
}

async function until(what: string, predicate: () => boolean, timeoutMs = 5_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!predicate()) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await sleep(5);
  }
}

interface HarnessConfig {
  commitIntervalMs?: number;
  maxRecordsPerTransaction?: number;
  consumeBatchSize?: number;
  guarantee?: 'exactly_once' | 'at_least_once';
  transactionTimeoutMs?: number;
}

function startWorker(config: HarnessConfig = {}): Promise<Harness> {
  return startWorkerWith(() => countingTopology(), config);
}

async function startWorkerWith<T extends ReturnType<typeof countingTopology> | ReturnType<typeof copyTopology>>(makeTopology: (cluster: FakeCluster) => T, config: HarnessConfig = {}): Promise<Harness<T>> {
  const cluster = new FakeCluster({ in: 2, out: 2 });
  const topology = makeTopology(cluster);
  const worker = new Worker(
    topology,
    {
      bootstrap: 'fake:9092',
      appId: 'app',
      instanceId: 'i1',
      stateDir: mkdtempSync(join(tmpdir(), 'onceflow-fake-')),
      commitIntervalMs: config.commitIntervalMs ?? 9_000,
      maxRecordsPerTransaction: config.maxRecordsPerTransaction ?? 3,
      ...(config.consumeBatchSize ? { consumeBatchSize: config.consumeBatchSize } : {}),
      ...(config.guarantee ? { guarantee: config.guarantee } : {}),
      ...(config.transactionTimeoutMs ? { transactionTimeoutMs: config.transactionTimeoutMs } : {}),
    },
    { clients: cluster.supplier() },
  );
  const events: WorkerEvent[] = [];
  worker.on('event', (e: WorkerEvent) => events.push(e));
  await worker.start();
  const consumer = cluster.consumers[0];
  assert.ok(consumer);
  consumer.rebalance('assign', [
    { topic: 'in', partition: 0 },
    { topic: 'in', partition: 1 },
  ]);
  await until('assignment', () => events.some((e) => e.type === 'assigned'));
  return { cluster, worker, topology, events, consumer };
}

/** Every input value reached `out` exactly once (as `value:n`, n its count so far under its key). */
function assertExactlyOnce(cluster: FakeCluster, inputs: readonly string[]): void {
  const seen = cluster.values('out').map((v) => v.slice(0, v.lastIndexOf(':')));
  assert.deepEqual([...seen].sort(), [...inputs].sort());
}

test('an abortable error aborts, rolls the stores back and seeks every owned partition to its committed offset; the output stays exactly once', async () => {
  // The replay commits after 3 records, mid-batch: the last record goes in the next transaction, on the interval.
  const h = await startWorker({ commitIntervalMs: 300 });
  try {
    h.cluster.append('in', 0, ['a', 'b', 'c']);
    await until('first commit', () => h.worker.stats.transactionsCommitted === 1);
    h.cluster.failNext('sendOffsetsToTransaction', errors.abortable());
    h.cluster.append('in', 0, ['d', 'e', 'f']);
    h.cluster.append('in', 1, ['x']);
    await until('abort', () => h.events.some((e) => e.type === 'aborted'));
    const aborted = h.cluster.calls.indexOf('producer0.abortTransaction');
    assert.ok(aborted >= 0, 'abortTransaction was called');
    await until('rewound', () => h.cluster.calls.slice(aborted).filter((c) => c.startsWith('consumer.seek')).length >= 2);
    const seeksAfter = h.cluster.calls.slice(aborted).filter((c) => c.startsWith('consumer.seek'));
    assert.deepEqual(seeksAfter.slice(0, 2).sort(), ['consumer.seek in-0@3', 'consumer.seek in-1@-2'], 'both owned partitions, the untouched one too, go back to their committed offset');
    assert.ok(h.topology.tasks.every((t) => t.rollbacks >= 1), 'every task was rolled back');
    await until('everything committed', () => h.cluster.committed.get('in-0') === 6 && h.cluster.committed.get('in-1') === 1);
    assertExactlyOnce(h.cluster, ['a', 'b', 'c', 'd', 'e', 'f', 'x']);
    assert.deepEqual(h.cluster.values('out').filter((v) => v.startsWith('f:')), ['f:1'], 'the rolled-back store did not count the aborted records');
    assert.equal(h.cluster.producers.length, 1, 'an abortable error keeps the producer');
  } finally {
    await h.worker.stop();
  }
});

test('a fenced producer is replaced, nothing of its transaction is committed, and every owned partition is rewound', async () => {
  const h = await startWorker();
  try {
    h.cluster.append('in', 0, ['a', 'b', 'c']);
    await until('first commit', () => h.worker.stats.transactionsCommitted === 1);
    h.cluster.failNext('commitTransaction', errors.fenced());
    h.cluster.append('in', 1, ['x', 'y', 'z']);
    await until('fenced', () => h.events.some((e) => e.type === 'fenced'));
    await until('a new producer', () => h.cluster.producers.length === 2);
    const calls = h.cluster.calls;
    const replaced = calls.indexOf('producer0.disconnect');
    assert.ok(replaced > calls.indexOf('producer0.commitTransaction'), 'the fenced producer was disconnected');
    assert.ok(calls.indexOf('producer1.initTransactions') > replaced, 'and a new one initialised');
    await until('read back and rewound', () => calls.slice(replaced).filter((c) => c.startsWith('consumer.seek')).length >= 2);
    const seeks = calls.slice(replaced).filter((c) => c.startsWith('consumer.seek')).slice(0, 2).sort();
    assert.deepEqual(seeks, ['consumer.seek in-0@3', 'consumer.seek in-1@-2']);
    assert.equal(h.worker.stats.fencings, 1);
    await until('everything committed', () => h.cluster.committed.get('in-1') === 3);
    assertExactlyOnce(h.cluster, ['a', 'b', 'c', 'x', 'y', 'z']);
  } finally {
    await h.worker.stop();
  }
});

test('a commit the coordinator answers "busy" is retried with the same producer, said as a producer-retry event, and lands once', async () => {
  const h = await startWorker();
  try {
    h.cluster.failNext('commitTransaction', errors.busy());
    h.cluster.append('in', 0, ['a', 'b', 'c']);
    await until('first commit', () => h.worker.stats.transactionsCommitted === 1);
    assert.deepEqual(
      h.events.filter((e) => e.type === 'producer-retry').map((e) => e.type === 'producer-retry' && [e.call, e.attempt]),
      [['commitTransaction', 1]],
    );
    assert.equal(h.cluster.producers.length, 1, 'no new producer');
    assert.equal(h.cluster.calls.filter((c) => c === 'producer0.commitTransaction').length, 2);
    assertExactlyOnce(h.cluster, ['a', 'b', 'c']);
  } finally {
    await h.worker.stop();
  }
});

test('a fetched batch holding more records than maxRecordsPerTransaction commits mid-batch, not in one transaction that could outlive its timeout', async () => {
  const h = await startWorker({ commitIntervalMs: 300 });
  try {
    h.cluster.append('in', 0, ['a', 'b', 'c', 'd', 'e', 'f', 'g']);
    await until('everything committed', () => h.cluster.committed.get('in-0') === 7);
    const committed = h.events.flatMap((e) => (e.type === 'committed' ? [e.records] : []));
    assert.deepEqual(committed, [3, 3, 1], 'three transactions of at most 3 records each');
    assertExactlyOnce(h.cluster, ['a', 'b', 'c', 'd', 'e', 'f', 'g']);
  } finally {
    await h.worker.stop();
  }
});

test('a commit whose answer is lost is read back: when it landed nothing is processed again', async () => {
  const h = await startWorker();
  try {
    h.cluster.failNext('commitTransaction', errors.unknown(), { landed: true });
    h.cluster.append('in', 0, ['a', 'b', 'c']);
    await until('producer replaced', () => h.events.some((e) => e.type === 'aborted' && e.reason.startsWith('producer replaced')));
    await until('read back', () => h.worker.stats.transactionsCommitted === 1);
    assert.equal(h.worker.stats.transactionsAborted, 0, 'a landed commit is not rolled back');
    assert.ok(h.cluster.calls.lastIndexOf('consumer.committed') > h.cluster.calls.indexOf('producer0.disconnect'), 'the committed offsets were read after the producer was replaced');
    h.cluster.append('in', 0, ['d', 'e', 'f']);
    await until('second commit', () => h.cluster.committed.get('in-0') === 6);
    const processed = h.topology.tasks.flatMap((t) => t.processed);
    assert.deepEqual(processed, ['in-0@0', 'in-0@1', 'in-0@2', 'in-0@3', 'in-0@4', 'in-0@5'], 'each record was processed once');
    assertExactlyOnce(h.cluster, ['a', 'b', 'c', 'd', 'e', 'f']);
  } finally {
    await h.worker.stop();
  }
});

test('a revoke during an open transaction commits it before the partition is handed back', async () => {
  const h = await startWorker({ maxRecordsPerTransaction: 1_000 });
  try {
    h.cluster.append('in', 0, ['a', 'b']);
    await until('processed', () => h.topology.tasks.some((t) => t.processed.length === 2));
    assert.equal(h.cluster.committed.size, 0, 'the transaction is still open');
    h.consumer.rebalance('revoke', [{ topic: 'in', partition: 0 }]);
    await until('revoked', () => h.events.some((e) => e.type === 'revoked'));
    const calls = h.cluster.calls;
    const committed = calls.indexOf('producer0.commitTransaction');
    const unassigned = calls.indexOf('consumer.incrementalUnassign in-0');
    assert.ok(committed >= 0 && committed < unassigned, `commit (${committed}) before unassign (${unassigned})`);
    assert.equal(h.cluster.committed.get('in-0'), 2);
    assertExactlyOnce(h.cluster, ['a', 'b']);
    const lineage = h.cluster.outputs.map((o) => o.headers['onceflow.lineage']);
    assert.deepEqual(lineage, ['in/0/0#0', 'in/0/1#0'], 'an output sent without an origin stands for the record its collector was made for');
  } finally {
    await h.worker.stop();
  }
});

test('an assignment during an open transaction commits it before the new task restores its stores', async () => {
  const h = await startWorker({ maxRecordsPerTransaction: 1_000 });
  try {
    h.consumer.rebalance('revoke', [{ topic: 'in', partition: 1 }]);
    await until('revoked', () => h.events.some((e) => e.type === 'revoked'));
    h.cluster.append('in', 0, ['a', 'b']);
    await until('processed', () => h.topology.tasks.some((t) => t.processed.length === 2));
    assert.equal(h.cluster.committed.size, 0, 'the transaction is still open');
    const before = h.cluster.calls.length;
    h.consumer.rebalance('assign', [{ topic: 'in', partition: 1 }]);
    await until('assigned again', () => h.events.filter((e) => e.type === 'assigned').length === 2);
    const calls = h.cluster.calls.slice(before);
    const committed = calls.indexOf('producer0.commitTransaction');
    const assigned = calls.findIndex((c) => c.startsWith('consumer.incrementalAssign'));
    assert.ok(committed >= 0 && committed < assigned, `commit (${committed}) before the assignment (${assigned}): ${calls.join(', ')}`);
    assert.equal(h.cluster.committed.get('in-0'), 2);
    assertExactlyOnce(h.cluster, ['a', 'b']);
  } finally {
    await h.worker.stop();
  }
});

test('lost partitions abort the open transaction instead of committing it, before they are handed back', async () => {
  const h = await startWorker({ maxRecordsPerTransaction: 1_000 });
  try {
    h.cluster.append('in', 0, ['a', 'b']);
    await until('processed', () => h.topology.tasks.some((t) => t.processed.length === 2));
    h.consumer.lost = true;
    h.consumer.rebalance('revoke', [{ topic: 'in', partition: 0 }]);
    await until('revoked', () => h.events.some((e) => e.type === 'revoked'));
    const calls = h.cluster.calls;
    assert.ok(calls.indexOf('producer0.abortTransaction') < calls.indexOf('consumer.incrementalUnassign in-0'));
    assert.equal(calls.indexOf('producer0.commitTransaction'), -1, 'nothing committed for partitions another worker now owns');
    assert.deepEqual(h.events.find((e) => e.type === 'revoked'), { type: 'revoked', partitions: ['in-0'], lost: true });
    assert.deepEqual(h.cluster.values('out'), []);
  } finally {
    await h.worker.stop();
  }
});

test('at least once: outputs are flushed before the offsets are committed, with the same loop', async () => {
  const h = await startWorker({ guarantee: 'at_least_once' });
  try {
    h.cluster.append('in', 1, ['a', 'b', 'c']);
    await until('offsets committed', () => h.cluster.committed.get('in-1') === 3);
    const calls = h.cluster.calls;
    assert.ok(calls.indexOf('producer0.flush') < calls.indexOf('consumer.commitSync'));
    assert.equal(calls.filter((c) => c.includes('Transaction')).length, 0, 'no transactional call');
    assertExactlyOnce(h.cluster, ['a', 'b', 'c']);
  } finally {
    await h.worker.stop();
  }
});

test('the worker reports its lifecycle state', async () => {
  const h = await startWorker();
  assert.equal(h.worker.state, 'RUNNING');
  await h.worker.stop();
  assert.equal(h.worker.state, 'STOPPED');
  assert.deepEqual(h.events.at(-1), { type: 'stopped', state: 'STOPPED' });
  const moves = h.worker.transitionCounts().filter((t) => t.machine === 'worker').map((t) => `${t.from}->${t.to}`);
  assert.ok(moves.includes('CREATED->STARTING') && moves.includes('PENDING_SHUTDOWN->STOPPED'));
  const transaction = h.worker.transitionCounts().filter((t) => t.machine === 'transaction').map((t) => `${t.from}->${t.to}`);
  assert.ok(transaction.includes('UNINITIALIZED->READY') && transaction.includes('READY->CLOSED'), transaction.join(' '));
});

test('an illegal call throws a typed error naming the state and the call', async () => {
  const cluster = new FakeCluster({});
  const output = new ExactlyOnceOutput({ clientConfig: {}, transactionalId: 'app-i1', appId: 'app', transactionTimeoutMs: 10_000, unsafeCommitOffsetsOutsideTransaction: false, clients: cluster.supplier(), faults: noFaults });
  await assert.rejects(output.begin(), (e: unknown) => e instanceof IllegalTransitionError && e.code === 'ILLEGAL_TRANSITION' && e.state === 'UNINITIALIZED' && e.call === 'begin' && /begin\(\).*UNINITIALIZED/.test(e.message));
  await output.connect();
  assert.equal(output.state, 'READY');
  assert.throws(() => output.produce('out', null, null, null, 0), (e: unknown) => e instanceof IllegalTransitionError && e.state === 'READY' && e.call === 'produce');
  await output.close();
  await assert.rejects(output.begin(), IllegalTransitionError);
  const machine = new StateMachine('worker', 'CREATED', WORKER_TRANSITIONS);
  assert.throws(() => machine.to('RUNNING', 'run'), (e: unknown) => e instanceof IllegalTransitionError && e.target === 'RUNNING');
});

test('every state of the transaction table can reach READY or CLOSED, and CLOSED is final', () => {
  assert.deepEqual(TRANSACTION_TRANSITIONS.CLOSED, []);
  for (const [state, next] of Object.entries(TRANSACTION_TRANSITIONS)) {
    if (state !== 'CLOSED') assert.ok(next.includes('CLOSED'), `${state} can close`);
  }
});

test('fenced while a namesake is in the group: the worker steps back before it creates a new producer', async () => {
  const h = await startWorker();
  h.cluster.groupMembers = ['app-i1', 'app-i1'];
  h.cluster.failNext('commitTransaction', errors.fenced());
  h.cluster.append('in', 0, ['a']);
  h.cluster.append('in', 0, ['b', 'c']);
  await assert.rejects(h.worker.done(), (e: unknown) => (e as { code?: unknown }).code === 'DUPLICATE_INSTANCE_ID');
  assert.equal(h.cluster.producers.length, 1, 'no new producer fenced the namesake in turn');
  assert.equal(h.worker.state, 'FAILED');
  assert.deepEqual(h.events.at(-1), { type: 'stopped', state: 'FAILED' });
  assert.equal(h.cluster.committed.size, 0);
});

test('sendOffsetsToTransaction stuck past its timeout (librdkafka#5456): the producer is replaced, not destroyed under the call, and disconnected once the call returns', async () => {
  const h = await startWorker({ commitIntervalMs: 100, transactionTimeoutMs: 1_000 });
  try {
    h.cluster.hangNext('sendOffsetsToTransaction');
    h.cluster.append('in', 0, ['a', 'b', 'c']);
    await until('producer replaced', () => h.events.some((e) => e.type === 'aborted' && e.reason.includes('sendOffsetsToTransaction did not return')), 15_000);
    assert.ok(h.cluster.calls.includes('producer1.initTransactions'), 'a new producer took over');
    assert.ok(!h.cluster.calls.includes('producer0.disconnect'), 'the stuck producer is not destroyed while its call waits');
    await until('committed', () => h.cluster.committed.get('in-0') === 3, 10_000);
    assertExactlyOnce(h.cluster, ['a', 'b', 'c']);
    h.cluster.release();
    await until('the stuck producer disconnected once its call returned', () => h.cluster.calls.includes('producer0.disconnect'));
  } finally {
    await h.worker.stop();
  }
});

test('a failed abort replaces the producer and reads the outcome back before anything is processed again', async () => {
  const h = await startWorker();
  try {
    h.cluster.failNext('sendOffsetsToTransaction', errors.abortable());
    h.cluster.failNext('abortTransaction', errors.unknown());
    h.cluster.append('in', 0, ['a', 'b', 'c']);
    await until('producer replaced', () => h.events.some((e) => e.type === 'aborted' && e.reason.startsWith('producer replaced')));
    const calls = h.cluster.calls;
    assert.ok(calls.indexOf('producer0.disconnect') > calls.indexOf('producer0.abortTransaction'));
    assert.ok(calls.lastIndexOf('consumer.committed') > calls.indexOf('producer1.initTransactions'), 'the committed offsets were read back with the new producer');
    await until('committed', () => h.cluster.committed.get('in-0') === 3);
    assertExactlyOnce(h.cluster, ['a', 'b', 'c']);
  } finally {
    await h.worker.stop();
  }
});

test('a seek that fails leaves its partition unsettled and is retried before the next fetch; none of its records is processed until then', async () => {
  const h = await startWorker();
  try {
    h.cluster.failNext('sendOffsetsToTransaction', errors.abortable());
    h.cluster.failNext('seek', errors.unknown());
    h.cluster.append('in', 0, ['a', 'b', 'c']);
    await until('committed', () => h.cluster.committed.get('in-0') === 3);
    const seeks = h.cluster.calls.filter((c) => c.startsWith('consumer.seek in-0'));
    assert.ok(seeks.length >= 2, `the failed seek was retried (${seeks.join(', ')})`);
    assert.deepEqual(
      h.events.filter((e) => e.type === 'seek-failed').map((e) => (e.type === 'seek-failed' ? e.partition : '')),
      ['in-0'],
      'the failed seek was reported, naming its partition',
    );
    assertExactlyOnce(h.cluster, ['a', 'b', 'c']);
  } finally {
    await h.worker.stop();
  }
});

test('a record batch the broker refuses three transactions in a row stops the worker with RECORD_TOO_LARGE_FOR_TOPIC, nothing committed', async () => {
  const h = await startWorker();
  for (let i = 0; i < 3; i++) h.cluster.failNext('commitTransaction', errors.tooLarge());
  h.cluster.append('in', 0, ['a', 'b', 'c']);
  await assert.rejects(h.worker.done(), (e: unknown) => (e as { code?: unknown }).code === 'RECORD_TOO_LARGE_FOR_TOPIC' && /topic out/.test((e as Error).message));
  assert.equal(h.worker.stats.transactionsAborted, 3);
  assert.equal(h.cluster.committed.size, 0);
  assert.deepEqual(h.cluster.values('out'), []);
});

test('records of stateless tasks fetched while a commit is in flight are processed meanwhile, and their outputs and offsets go into the next transaction', async () => {
  const h = await startWorkerWith(copyTopology, { consumeBatchSize: 3 });
  h.cluster.commitDelayMs = 40;
  try {
    h.cluster.append('in', 0, ['a', 'b', 'c', 'd', 'e', 'f']);
    await until('both transactions committed', () => h.cluster.committed.get('in-0') === 6);
    const processed = h.topology.tasks.flatMap((t) => t.processed);
    assert.deepEqual(processed.map((p) => p.at), ['in-0@0', 'in-0@1', 'in-0@2', 'in-0@3', 'in-0@4', 'in-0@5'], 'each record was processed once');
    assert.deepEqual(processed.slice(3).map((p) => p.committedThen), [-1, -1, -1], 'the second batch ran before the first commit landed');
    assert.equal(h.worker.stats.transactionsCommitted, 2);
    assertExactlyOnce(h.cluster, ['a', 'b', 'c', 'd', 'e', 'f']);
  } finally {
    await h.worker.stop();
  }
});

test('the next batch is fetched while the current one is processed, and every record still goes through once, in order', async () => {
  const h = await startWorkerWith(copyTopology, { consumeBatchSize: 2, maxRecordsPerTransaction: 100 });
  try {
    h.cluster.append('in', 0, ['a', 'b', 'c', 'd', 'e', 'f']);
    await until('every record processed', () => h.topology.tasks.flatMap((t) => t.processed).length >= 6);
    const processed = h.topology.tasks.flatMap((t) => t.processed);
    assert.deepEqual(processed.map((p) => p.at), ['in-0@0', 'in-0@1', 'in-0@2', 'in-0@3', 'in-0@4', 'in-0@5']);
    // Without the prefetch the first batch's records would run with one fetch made, the second's with two.
    assert.deepEqual(processed.map((p) => p.fetchesThen), [2, 2, 3, 3, 3, 3], 'each batch ran with the next one already fetched');
    await h.worker.stop();
    assertExactlyOnce(h.cluster, ['a', 'b', 'c', 'd', 'e', 'f']);
  } finally {
    await h.worker.stop();
  }
});

test('when the commit a speculation overlapped fails, what it processed is dropped and processed again after the rewind: nothing twice', async () => {
  const h = await startWorkerWith(copyTopology, { consumeBatchSize: 3 });
  h.cluster.commitDelayMs = 40;
  try {
    h.cluster.failNext('commitTransaction', errors.abortable());
    h.cluster.append('in', 0, ['a', 'b', 'c', 'd', 'e', 'f']);
    await until('abort', () => h.events.some((e) => e.type === 'aborted'));
    await until('everything committed', () => h.cluster.committed.get('in-0') === 6);
    const processed = h.topology.tasks.flatMap((t) => t.processed).map((p) => p.at);
    assert.ok(processed.filter((p) => p === 'in-0@3').length >= 2, `in-0@3 was processed during the failed commit and again after it: ${processed.join(' ')}`);
    assertExactlyOnce(h.cluster, ['a', 'b', 'c', 'd', 'e', 'f']);
  } finally {
    await h.worker.stop();
  }
});
