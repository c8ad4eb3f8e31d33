import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { TopologyBuilder } from '../../src/dsl/topology-builder.ts';
import { JoinWindows } from '../../src/dsl/windows.ts';
import { compile } from '../../src/graph/index.ts';
import { connectProducer, disconnect, flush } from '../../src/kafka/clients.ts';
import { readTopic } from '../../src/kafka/read-topic.ts';
import { Worker } from '../../src/runtime/worker/worker.ts';
import type { WorkerEvent } from '../../src/runtime/base/worker-events.ts';
import { jsonSerde, stringSerde } from '../../src/serdes/index.ts';
import { waitCaughtUp } from '../../src/verify/progress.ts';
import { createTopics, testCluster, uniqueName } from '../support/cluster.ts';

interface Stamped {
  readonly key: string;
  readonly value: string;
  readonly timestamp: number;
}

/** Writes records with the event times given (not the time of writing), as a backfill or a late source does. */
async function produceStamped(bootstrap: string, topic: string, records: readonly Stamped[]): Promise<void> {
  const producer = await connectProducer({ 'bootstrap.servers': bootstrap, 'enable.idempotence': true, 'linger.ms': 5, 'partitioner': 'murmur2_random' });
  try {
    for (const r of records) producer.produce(topic, null, Buffer.from(r.value), r.key, r.timestamp);
    await flush(producer, 60_000);
  } finally {
    await disconnect(producer);
  }
}

async function outputValues(bootstrap: string, topic: string): Promise<string[]> {
  return (await readTopic(bootstrap, topic, { isolation: 'read_committed' })).map((r) => r.value!.toString()).sort();
}

describe('a task takes the records of its inputs in timestamp order', { concurrency: false }, () => {
  test('stream-stream join on a backlog (one side written whole before the other): every pair joins, as when the records arrive live', async () => {
    const { bootstrap } = testCluster();
    const t = { views: uniqueName('views'), clicks: uniqueName('clicks'), out: uniqueName('pairs') };
    const appId = uniqueName('app-pairs');
    await createTopics(bootstrap, Object.values(t).map((name) => ({ name, partitions: 6 })));
    const base = Date.now() - 3_600_000;
    const KEYS = 60;
    const ROUNDS = 20;
    const views: Stamped[] = [];
    const clicks: Stamped[] = [];
    for (let round = 0; round < ROUNDS; round++) {
      for (let k = 0; k < KEYS; k++) {
        const ts = base + round * 10_000 + k;
        views.push({ key: `u${k}`, value: `v${round}`, timestamp: ts });
        clicks.push({ key: `u${k}`, value: `c${round}`, timestamp: ts + 500 });
      }
    }
    // The clicks go first: read without synchronization, their stream time runs an hour ahead of every
    // view, and a view then falls behind the join's grace period and is dropped as late.
    await produceStamped(bootstrap, t.clicks, clicks);
    await produceStamped(bootstrap, t.views, views);
    const app = new TopologyBuilder({ appId });
    const clickStream = app.stream(t.clicks, { key: stringSerde, value: stringSerde });
    app
      .stream(t.views, { key: stringSerde, value: stringSerde })
      .join(clickStream, (key, view, click) => `${key}:${view}+${click}`, JoinWindows.of(1_000), { name: 'view-click', value: stringSerde })
      .to(t.out);
    const worker = new Worker(compile(app), { bootstrap, appId, instanceId: 'only', commitIntervalMs: 50 });
    const events: WorkerEvent[] = [];
    worker.on('event', (e: WorkerEvent) => events.push(e));
    try {
      await worker.start();
      await waitCaughtUp({ bootstrap, groupId: appId, plainTopics: [t.views, t.clicks], stableMs: 1_500, timeoutMs: 180_000 });
    } finally {
      await worker.stop();
    }
    const expected = views.map((v, i) => `${v.key}:${v.value}+${clicks[i]!.value}`).sort();
    const got = await outputValues(bootstrap, t.out);
    assert.equal(got.length, expected.length, `${got.length} of ${expected.length} pairs; late records dropped: ${worker.stats.lateRecordsDropped}`);
    assert.deepEqual(got, expected);
    assert.equal(worker.stats.lateRecordsDropped, 0);
    assert.deepEqual(events.filter((e) => e.type === 'enforced-processing'), []);
  });

  test('table-table join on a backlog (one table written whole before the other): the updates it emits are those of the records arriving live, in timestamp order', async () => {
    const { bootstrap } = testCluster();
    const t = { left: uniqueName('accounts'), right: uniqueName('limits'), out: uniqueName('joined-rows') };
    const appId = uniqueName('app-table-table');
    await createTopics(bootstrap, Object.values(t).map((name) => ({ name, partitions: 3 })));
    const base = Date.now() - 3_600_000;
    const KEYS = 30;
    const left: Stamped[] = [];
    const right: Stamped[] = [];
    // Per key, the two tables change in turn: left at t, right at t+1, left at t+2, ...
    for (let round = 0; round < 3; round++) {
      for (let k = 0; k < KEYS; k++) {
        left.push({ key: `k${k}`, value: `L${round}`, timestamp: base + round * 10 + k * 1_000 });
        right.push({ key: `k${k}`, value: `R${round}`, timestamp: base + round * 10 + 5 + k * 1_000 });
      }
    }
    // Live, in timestamp order, every key's joined row goes (none), L0R0, L1R0, L1R1, L2R1, L2R2; the right
    // table written first and read first would make it (none) three times, then L0R2, L1R2, L2R2.
    await produceStamped(bootstrap, t.right, right);
    await produceStamped(bootstrap, t.left, left);
    const app = new TopologyBuilder({ appId });
    const rightTable = app.table(t.right, { key: stringSerde, value: stringSerde });
    app
      .table(t.left, { key: stringSerde, value: stringSerde })
      .join(rightTable, (_key, l, r) => `${l}${r}`, { value: stringSerde })
      .toStream()
      .to(t.out);
    const worker = new Worker(compile(app), { bootstrap, appId, instanceId: 'only', commitIntervalMs: 50, cacheMaxBytes: 0 });
    try {
      await worker.start();
      await waitCaughtUp({ bootstrap, groupId: appId, plainTopics: [t.left, t.right], stableMs: 1_500, timeoutMs: 180_000 });
    } finally {
      await worker.stop();
    }
    const rows = new Map<string, string[]>();
    for (const r of await readTopic(bootstrap, t.out, { isolation: 'read_committed' })) {
      const key = r.key!.toString();
      // A null value: the inner join has no row for the key (one side missing).
      rows.set(key, [...(rows.get(key) ?? []), r.value?.toString() ?? '-']);
    }
    const live = ['-', 'L0R0', 'L1R0', 'L1R1', 'L2R1', 'L2R2'];
    const differing = [...Array(KEYS).keys()].filter((k) => (rows.get(`k${k}`) ?? []).join(',') !== live.join(','));
    assert.deepEqual(differing.map((k) => `k${k}: ${(rows.get(`k${k}`) ?? []).join(',')}`), []);
  });

  test('a table row that arrives 5 s after the order it belongs to (older event time, both live) is joined within maxTaskIdleMs, as when both arrive together', async () => {
    const { bootstrap } = testCluster();
    const t = { orders: uniqueName('orders'), customers: uniqueName('customers'), out: uniqueName('enriched') };
    const appId = uniqueName('app-late-row');
    await createTopics(bootstrap, Object.values(t).map((name) => ({ name, partitions: 1 })));
    const app = new TopologyBuilder({ appId });
    const customers = app.table(t.customers, { key: stringSerde, value: jsonSerde<{ segment: string }>() });
    app
      .stream(t.orders, { key: stringSerde, value: stringSerde })
      .join(customers, (key, order, customer) => `${key}:${order}:${customer.segment}`, { name: 'enrich', value: stringSerde })
      .to(t.out);
    const worker = new Worker(compile(app), { bootstrap, appId, instanceId: 'only', commitIntervalMs: 50, maxTaskIdleMs: 15_000 });
    const events: WorkerEvent[] = [];
    worker.on('event', (e: WorkerEvent) => events.push(e));
    try {
      const assigned = new Promise<void>((resolve) => worker.on('event', (e: WorkerEvent) => e.type === 'assigned' && resolve()));
      await worker.start();
      await assigned;
      const now = Date.now();
      // Together: the row and its order written at once.
      await produceStamped(bootstrap, t.customers, [{ key: 'c1', value: JSON.stringify({ segment: 'gold' }), timestamp: now - 1_000 }]);
      await produceStamped(bootstrap, t.orders, [{ key: 'c1', value: 'o1', timestamp: now }]);
      // Late: the order first, its customer's row (stamped before it) 5 s later.
      await produceStamped(bootstrap, t.orders, [{ key: 'c2', value: 'o2', timestamp: now + 1 }]);
      await new Promise((r) => setTimeout(r, 5_000));
      await produceStamped(bootstrap, t.customers, [{ key: 'c2', value: JSON.stringify({ segment: 'silver' }), timestamp: now - 500 }]);
      await waitCaughtUp({ bootstrap, groupId: appId, plainTopics: [t.orders, t.customers], stableMs: 1_500, timeoutMs: 120_000 });
    } finally {
      await worker.stop();
    }
    assert.deepEqual(await outputValues(bootstrap, t.out), ['c1:o1:gold', 'c2:o2:silver']);
    assert.deepEqual([...worker.joinMisses()], [], 'no order found its table empty');
    assert.ok(worker.stats.taskIdleMs >= 4_000, `the task waited for the late row (${worker.stats.taskIdleMs} ms idle)`);
  });
});
