import assert from 'node:assert/strict';
import { test } from 'node:test';
import { TopologyBuilder } from '../../src/dsl/topology-builder.ts';
import { hoppingWindow, tumblingWindow } from '../../src/dsl/windows.ts';
import type { WindowSpec } from '../../src/dsl/types.ts';
import { compile } from '../../src/graph/index.ts';
import { connectProducer, disconnect, flush } from '../../src/kafka/clients.ts';
import { readTopic } from '../../src/kafka/read-topic.ts';
import { Worker } from '../../src/runtime/worker/worker.ts';
import { runtimeTopology } from '../../src/runtime/task/worker-topology.ts';
import { jsonSerde, stringSerde } from '../../src/serdes/index.ts';
import { windowedSerde } from '../../src/state/windowed.ts';
import { waitCaughtUp } from '../../src/verify/progress.ts';
import { createTopics, testCluster, uniqueName } from '../support/cluster.ts';

const SEC = 1000;
const PARTITIONS = 3;
const KEYS = ['k0', 'k1', 'k2', 'k3', 'k4', 'k5'];
const WINDOWS = {
  tumbling: tumblingWindow(10 * SEC, { graceMs: 5 * SEC, lateRecords: 'dead-letter' }),
  hopping: hoppingWindow(10 * SEC, 5 * SEC, { graceMs: 2 * SEC, lateRecords: 'dead-letter' }),
} as const;
type WindowName = keyof typeof WINDOWS;

interface Click {
  readonly key: string;
  readonly partition: number;
  readonly timestamp: number;
}

/** Deterministic clicks: time moves on ~0.7 s a record, with some records arriving 3–25 s late. */
function clicks(count: number, seed: number, from: number): Click[] {
  let s = seed;
  const rand = () => ((s = (s * 1_103_515_245 + 12_345) % 2 ** 31) / 2 ** 31);
  const out: Click[] = [];
  let now = from;
  for (let i = 0; i < count; i++) {
    now += Math.floor(rand() * 1_400);
    const key = KEYS[Math.floor(rand() * KEYS.length)]!;
    const r = rand();
    const lateBy = r < 0.1 ? 12 * SEC + Math.floor(rand() * 13 * SEC) : r < 0.25 ? 3 * SEC + Math.floor(rand() * 4 * SEC) : 0;
    out.push({ key, partition: KEYS.indexOf(key) % PARTITIONS, timestamp: Math.max(0, now - lateBy) });
  }
  return out;
}

/**
 * What the windows must hold, computed here from the input alone: stream time per partition is the
 * largest timestamp seen so far, and a window takes a record only while stream time is before its end plus grace.
 * `restartAt` models a worker that forgot stream time at that record (the bug this test guards against).
 */
function recompute(input: readonly Click[], w: WindowSpec, restartAt = -1): { counts: Map<string, number>; late: number } {
  const counts = new Map<string, number>();
  const streamTime = new Map<number, number>();
  let late = 0;
  input.forEach((c, i) => {
    if (i === restartAt) streamTime.clear();
    const st = Math.max(streamTime.get(c.partition) ?? Number.NEGATIVE_INFINITY, c.timestamp);
    streamTime.set(c.partition, st);
    let taken = false;
    for (let start = Math.floor(c.timestamp / w.advanceMs) * w.advanceMs; start > c.timestamp - w.sizeMs && start >= 0; start -= w.advanceMs) {
      if (start + w.sizeMs + w.graceMs <= st) continue;
      const k = `${c.key}@${start}-${start + w.sizeMs}`;
      counts.set(k, (counts.get(k) ?? 0) + 1);
      taken = true;
    }
    if (!taken) late++;
  });
  return { counts, late };
}

test('tumbling and hopping windows on the real broker equal a recomputation from the input, across a restart, with late records dead-lettered', async () => {
  const { bootstrap } = testCluster();
  const input = uniqueName('clicks');
  const outputs: Record<WindowName, string> = { tumbling: uniqueName('clicks-tumbling'), hopping: uniqueName('clicks-hopping') };
  const appId = uniqueName('clicks-app');
  const app = new TopologyBuilder({ appId });
  const source = app.stream(input, { key: stringSerde, value: stringSerde });
  for (const name of ['tumbling', 'hopping'] as const) {
    source
      .groupByKey()
      .windowedBy(WINDOWS[name])
      .count({ name })
      .toStream()
      .to(outputs[name], { key: windowedSerde(stringSerde), value: jsonSerde<number>() });
  }
  const topology = compile(app);
  const dlq = topology.topics.find((t) => t.kind === 'dead-letter')?.name;
  assert.ok(dlq, 'late records have a dead-letter topic');
  await createTopics(bootstrap, [
    { name: input, partitions: PARTITIONS },
    { name: outputs.tumbling, partitions: PARTITIONS },
    { name: outputs.hopping, partitions: PARTITIONS },
    { name: dlq, partitions: 1 },
  ]);

  // In the past: the broker refuses timestamps more than an hour ahead of its clock.
  const first = clicks(900, 11, Date.now() - 3 * 3_600_000);
  const lastTime = Math.max(...first.map((c) => c.timestamp));
  // The second run starts with records that are late only for a worker that remembers the stream time.
  const second = [
    ...KEYS.map((key) => ({ key, partition: KEYS.indexOf(key) % PARTITIONS, timestamp: lastTime - 20 * SEC })),
    ...clicks(900, 29, lastTime - 2 * SEC),
  ];
  const all = [...first, ...second];

  const producer = await connectProducer({ 'bootstrap.servers': bootstrap, 'linger.ms': 5 });
  const produce = async (batch: readonly Click[]) => {
    for (const c of batch) producer.produce(input, c.partition, Buffer.from('click'), c.key, c.timestamp);
    await flush(producer, 30_000);
  };
  let lateCounted = 0;
  const runUntilCaughtUp = async (instanceId: string) => {
    const worker = new Worker(runtimeTopology(topology), { bootstrap, appId, instanceId, guarantee: 'exactly_once' });
    await worker.start();
    await waitCaughtUp({ bootstrap, groupId: appId, plainTopics: [input], timeoutMs: 240_000 });
    await worker.stop();
    assert.equal(worker.stats.transactionsAborted, 0, 'nothing was replayed, so nothing was counted twice');
    lateCounted += worker.stats.lateRecordsDropped;
  };
  try {
    await produce(first);
    await runUntilCaughtUp('first');
    await produce(second);
    await runUntilCaughtUp('second');
  } finally {
    await disconnect(producer);
  }

  assert.equal((await readTopic(bootstrap, input)).length, all.length, 'the broker took every input record');
  const late = recompute(all, WINDOWS.tumbling).late + recompute(all, WINDOWS.hopping).late;
  assert.equal(lateCounted, late, 'the workers counted every late record (onceflow_late_records_dropped_total)');
  const deadLetters = await readTopic(bootstrap, dlq, { isolation: 'read_committed' });
  for (const name of ['tumbling', 'hopping'] as const) {
    const expected = recompute(all, WINDOWS[name]);
    const forgetful = recompute(all, WINDOWS[name], first.length);
    assert.notDeepEqual(forgetful.counts, expected.counts, `the input makes a forgotten stream time visible in ${name} windows`);
    assert.ok(expected.late > 0, `${name}: the input has records later than the grace period`);

    const records = await readTopic(bootstrap, outputs[name], { isolation: 'read_committed' });
    const keySerde = windowedSerde(stringSerde);
    const last = new Map<string, number>();
    for (const r of records) {
      const w = keySerde.deserialize(r.key!, { topic: outputs[name], role: 'key' });
      last.set(`${w.key}@${w.start}-${w.end}`, JSON.parse(r.value!.toString()) as number);
    }
    const wrong = [...expected.counts].filter(([k, n]) => last.get(k) !== n).map(([k, n]) => `${k}: expected ${n}, got ${last.get(k)}`);
    assert.deepEqual(wrong, [], `${name}: ${wrong.length} of ${expected.counts.size} windows differ`);
    assert.equal(last.size, expected.counts.size, `${name}: no window that the input does not explain`);

    const lateHere = deadLetters.filter((r) => r.headers.some((h) => h.key === 'onceflow.error.stage' && h.value.toString().includes(name)));
    assert.ok(lateHere.every((r) => r.headers.some((h) => h.key === 'onceflow.error.code' && h.value.toString() === 'LATE_RECORD')));
    assert.equal(lateHere.length, expected.late, `${name}: every late record is dead-lettered once`);
  }
});
