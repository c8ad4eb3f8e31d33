import assert from 'node:assert/strict';
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { test } from 'node:test';
import { setTimeout as sleep } from 'node:timers/promises';
import { LINEAGE } from '../../../src/core/headers.ts';
import { partitionFor } from '../../../src/core/partitioner.ts';
import { TopologyBuilder } from '../../../src/dsl/topology-builder.ts';
import { compile } from '../../../src/graph/compile.ts';
import { Worker } from '../../../src/runtime/worker/worker.ts';
import type { WorkerEvent } from '../../../src/runtime/base/worker-events.ts';
import { jsonSerde, stringSerde } from '../../../src/serdes/index.ts';
import { errors, FakeCluster } from '../fake-kafka.ts';
import { InProcessThread } from './in-process-thread.ts';

/** A count per key: one stateful sub-topology, whose tasks the threads host. */
function counting() {
  const builder = new TopologyBuilder({ appId: 'app' });
  builder.stream('in', { key: stringSerde, value: stringSerde }).groupByKey().count({ name: 'count' }).toStream().to('counts', { key: stringSerde, value: jsonSerde<number>() });
  return compile(builder);
}

const WORDS = ['a', 'b', 'a', 'c', 'a', 'b', 'd', 'a', 'x', 'y', 'x', 'x', 'z', 'y', 'x', 'w'];
const EXPECTED: Record<string, number> = { a: 4, b: 2, c: 1, d: 1, x: 4, y: 2, z: 1, w: 1 };
/** Each word in the partition the default partitioner gives its key, where interactive queries look for it. */
const INPUT: Record<number, string[]> = { 0: [], 1: [] };
for (const word of WORDS) INPUT[partitionFor(Buffer.from(word), 2)]!.push(word);

async function runWorker(threads: InProcessThread[], failCommits = 0) {
  const cluster = new FakeCluster({ in: 2, counts: 2, 'app-dlq': 1, 'app-count-changelog': 2 });
  let next = 0;
  const worker = new Worker(
    counting(),
    // No record cache: every update goes out, so the outputs show each count a key went through.
    { bootstrap: 'fake:9092', appId: 'app', instanceId: 'i1', stateDir: mkdtempSync(join(tmpdir(), 'onceflow-hosted-')), consumeBatchSize: 3, commitIntervalMs: 20, cacheMaxBytes: 0, threads: threads.length },
    { clients: cluster.supplier(), ...(threads.length > 0 ? { processingThread: { spawn: () => threads[next++]!, file: 'in-process' } } : {}) },
  );
  const events: WorkerEvent[] = [];
  worker.on('event', (e: WorkerEvent) => events.push(e));
  await worker.start();
  let failure: unknown;
  worker.done().catch((e: unknown) => (failure = e));
  cluster.consumers[0]!.rebalance('assign', [0, 1].map((partition) => ({ topic: 'in', partition })));
  for (let i = 0; i < failCommits; i++) cluster.failNext('commitTransaction', errors.abortable());
  for (const [partition, values] of Object.entries(INPUT)) cluster.append('in', Number(partition), values);
  const deadline = Date.now() + 5_000;
  while (cluster.committed.get('in-0') !== INPUT[0]!.length || cluster.committed.get('in-1') !== INPUT[1]!.length) {
    if (Date.now() > deadline) throw new Error(`not everything committed: ${String(failure)} ${JSON.stringify(events.slice(-20))}`);
    await sleep(5);
  }
  // The stores' committed copy moves once the commit's answer is in, a turn after the offsets.
  let queried: Record<string, unknown> = {};
  while (Date.now() < deadline) {
    queried = Object.fromEntries(Object.keys(EXPECTED).map((key) => [key, worker.queries.get('count', key)]));
    if (Object.keys(EXPECTED).every((key) => (queried[key] as { value?: number }).value === EXPECTED[key])) break;
    await sleep(5);
  }
  await worker.stop();
  const outputs = cluster.outputs.filter((o) => o.topic === 'counts').map((o) => `${o.key}=${o.value} ${o.headers[LINEAGE.header]}`);
  // One record per key a transaction wrote: how many depends on where commits fell, the last value per key does not.
  const changelog = Object.fromEntries(cluster.outputs.filter((o) => o.topic === 'app-count-changelog').map((o) => [String(o.key), String(o.value)]));
  return { outputs, changelog, events, queried };
}

/** The last count each key reached in the committed output. */
function finalCounts(outputs: readonly string[]): Record<string, number> {
  const counts: Record<string, number> = {};
  for (const o of outputs) {
    const [key, value] = o.split(' ')[0]!.split('=');
    counts[key!] = Number(value);
  }
  return counts;
}

test('tasks hosted on two processing threads commit the same outputs, lineage and changelog as the main thread, and answer queries', async () => {
  const threads = [new InProcessThread(async () => counting()), new InProcessThread(async () => counting())];
  const hosted = await runWorker(threads);
  const direct = await runWorker([]);
  assert.deepEqual([...hosted.outputs].sort(), [...direct.outputs].sort());
  assert.deepEqual(finalCounts(hosted.outputs), EXPECTED);
  assert.equal(Object.keys(hosted.changelog).length, Object.keys(EXPECTED).length);
  assert.deepEqual(hosted.changelog, direct.changelog);
  // One task per thread: each hosted one and processed its records.
  for (const thread of threads) {
    assert.equal(thread.taskRequests.get('create'), 1);
    assert.ok((thread.taskRequests.get('process') ?? 0) > 0);
  }
  assert.deepEqual(hosted.events.find((e) => e.type === 'processing-thread'), { type: 'processing-thread', subtopologies: [], hosted: [0], threads: 2 });
  for (const [key, count] of Object.entries(EXPECTED)) assert.deepEqual(hosted.queried[key], { status: 'found', value: count, partition: partitionFor(Buffer.from(key), 2) });
});

test('a processing thread that dies under its hosted tasks: the transaction aborts, they are restored on the main thread, nothing lost or counted twice', async () => {
  // Dies at its third request, the first run (after creating the two tasks): before anything committed, as
  // the fake's changelogs cannot be read back (test/integration/thread-death.test.ts restores from a real one).
  const dying = new InProcessThread(async () => counting(), 3);
  const run = await runWorker([dying]);
  const warned = run.events.filter((e) => e.type === 'processing-thread' && e.failed === true);
  assert.equal(warned.length, 1, JSON.stringify(run.events.filter((e) => e.type === 'processing-thread')));
  assert.match(String((warned[0] as { off?: string }).off), /exited \(1\)/);
  assert.ok(run.events.some((e) => e.type === 'aborted'), 'the transaction the dead thread wrote into aborted');
  assert.deepEqual(finalCounts(run.outputs), EXPECTED);
  for (const [key, count] of Object.entries(EXPECTED)) assert.equal((run.queried[key] as { value?: number }).value, count);
});

test('an aborted transaction with tasks on two threads rolls back both threads’ stores: the replay counts nothing twice', async () => {
  const threads = [new InProcessThread(async () => counting()), new InProcessThread(async () => counting())];
  const run = await runWorker(threads, 2);
  assert.ok(run.events.filter((e) => e.type === 'aborted').length >= 1, 'a commit failed and its transaction aborted');
  for (const thread of threads) assert.ok((thread.taskRequests.get('rollback') ?? 0) >= 1, 'each thread rolled its task back');
  assert.deepEqual(finalCounts(run.outputs), EXPECTED);
  for (const [key, count] of Object.entries(EXPECTED)) assert.equal((run.queried[key] as { value?: number }).value, count);
});
