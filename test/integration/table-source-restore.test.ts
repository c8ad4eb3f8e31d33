import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, test } from 'node:test';
import { TopologyBuilder } from '../../src/dsl/topology-builder.ts';
import { compile } from '../../src/graph/index.ts';
import { produceRecords } from '../../src/kafka/produce-records.ts';
import { readTopic } from '../../src/kafka/read-topic.ts';
import type { WorkerEvent } from '../../src/runtime/base/worker-events.ts';
import { runtimeTopology } from '../../src/runtime/task/worker-topology.ts';
import { Worker } from '../../src/runtime/worker/worker.ts';
import { jsonSerde, stringSerde } from '../../src/serdes/index.ts';
import { waitCaughtUp } from '../../src/verify/progress.ts';
import { DEAD_LETTER } from '../../src/core/headers.ts';
import { readCheckpoint } from '../../src/state/lmdb-store.ts';

const stateDir = mkdtempSync(join(tmpdir(), 'onceflow-table-source-state-'));
after(() => rmSync(stateDir, { recursive: true, force: true }));
import { createTopics, testCluster, uniqueName } from '../support/cluster.ts';
import { freePort } from '../support/ports.ts';
import { startObservability } from '../../src/observability/health.ts';

const record = (key: string, value: string | null, timestamp: number) => ({ key: Buffer.from(key), value: value === null ? null : Buffer.from(value), timestamp });

test('a restart restores a table from its source topic without the record its serdes refuse (dead-lettered once, when processed), and a versioned table with its history', async () => {
  const { bootstrap } = testCluster();
  const t = { customers: uniqueName('customers'), orders: uniqueName('orders'), out: uniqueName('orders-out'), rates: uniqueName('rates'), payments: uniqueName('payments'), priced: uniqueName('priced') };
  const appId = uniqueName('app-table-restore');
  await createTopics(bootstrap, Object.values(t).map((name) => ({ name, partitions: 1 })));
  const app = new TopologyBuilder({ appId });
  const customers = app.table(t.customers, { key: stringSerde, value: jsonSerde<{ name: string }>(), store: 'customers' });
  app
    .stream(t.orders, { key: stringSerde, value: stringSerde })
    .join(customers, (_k, order, customer) => `${order}:${customer.name}`, { value: stringSerde })
    .to(t.out);
  const rates = app.table(t.rates, { key: stringSerde, value: jsonSerde<number>(), store: 'rates', versioned: { historyRetentionMs: 3_600_000 } });
  app
    .stream(t.payments, { key: stringSerde, value: stringSerde })
    .join(rates, (_k, payment, rate) => `${payment}@${rate}`, { value: stringSerde })
    .to(t.priced);
  const compiled = compile(app);
  const base = Date.now() - 60_000;
  const caughtUp = () => waitCaughtUp({ bootstrap, groupId: appId, plainTopics: [t.customers, t.orders, t.rates, t.payments], stableMs: 1_000 });
  const run = async (instanceId: string, body: (worker: Worker) => Promise<void>): Promise<WorkerEvent[]> => {
    const worker = new Worker(runtimeTopology(compiled), { bootstrap, appId, instanceId });
    const events: WorkerEvent[] = [];
    worker.on('event', (e: WorkerEvent) => events.push(e));
    await worker.start();
    try {
      await body(worker);
    } finally {
      await worker.stop();
    }
    return events;
  };

  await produceRecords(bootstrap, t.customers, [record('c1', JSON.stringify({ name: 'ann' }), base), record('c1', '{not json', base + 1)]);
  await produceRecords(bootstrap, t.rates, [record('eur', '100', base), record('eur', '103', base + 3_000)]);
  await run('first', async () => {
    await caughtUp();
    await produceRecords(bootstrap, t.orders, [record('c1', 'o1', base + 10)]);
    await produceRecords(bootstrap, t.payments, [record('eur', 'p4', base + 4_000)]);
    await caughtUp();
  });
  assert.deepEqual(await values(t.out), ['o1:ann'], 'the undecodable row left the previous one in place');
  assert.deepEqual(await values(t.priced), ['p4@103']);

  const events = await run('second', async (worker) => {
    await caughtUp();
    await produceRecords(bootstrap, t.orders, [record('c1', 'o2', base + 20)]);
    // Out of order: it must meet the rate valid at its time, which only the restored history has.
    await produceRecords(bootstrap, t.payments, [record('eur', 'p2', base + 2_000)]);
    await caughtUp();
    const port = await freePort();
    const http = await startObservability(worker, { port, host: '127.0.0.1', readyWithoutPartitions: true });
    try {
      const get = async (path: string) => {
        const res = await fetch(`http://127.0.0.1:${port}${path}`, { signal: AbortSignal.timeout(30_000) });
        return { status: res.status, body: (await res.json()) as Record<string, unknown> };
      };
      assert.equal((await get('/stores/rates/eur')).body.value, 103, 'interactive queries answer the latest version');
      assert.equal((await get(`/stores/rates/eur?asOf=${base + 2_000}`)).body.value, 100, 'and, with asOf, the version valid then');
      assert.equal((await get(`/stores/rates/eur?asOf=${base - 1}`)).status, 404, 'no version before the first');
      assert.deepEqual([(await get('/stores/rates/eur?asOf=soon')).status, (await get('/stores/rates/eur?asOf=soon')).body.code], [400, 'QUERY_RANGE_INVALID']);
      assert.deepEqual([(await get('/stores/customers/c1?asOf=1')).status, (await get('/stores/customers/c1?asOf=1')).body.code], [400, 'QUERY_NOT_VERSIONED']);
      assert.ok(((await get('/stores')).body.stores as { name: string; versioned?: boolean }[]).some((st) => st.name === 'rates' && st.versioned === true));
    } finally {
      await http.close();
    }
  });
  assert.deepEqual(await values(t.out), ['o1:ann', 'o2:ann'], 'the restored table has no row its join cannot decode');
  assert.deepEqual(await values(t.priced), ['p4@103', 'p2@100'], 'the versioned table came back with its history');
  const skipped = events.filter((e) => e.type === 'table-record-not-restored');
  assert.equal(skipped.length, 1, JSON.stringify(skipped));
  assert.ok(skipped[0]?.type === 'table-record-not-restored');
  assert.deepEqual([skipped[0].store, skipped[0].topic, skipped[0].partition, skipped[0].offset, skipped[0].code], ['customers', t.customers, 0, 1, 'JSON_INVALID']);

  const dead = await readTopic(bootstrap, `${appId}-dlq`, { isolation: 'read_committed' });
  const header = (r: (typeof dead)[number], name: string) => r.headers?.find((h) => h.key === name)?.value.toString();
  assert.deepEqual(
    dead.map((r) => [header(r, DEAD_LETTER.sourceTopic), header(r, DEAD_LETTER.sourceOffset), header(r, DEAD_LETTER.code)]),
    [[t.customers, '1', 'JSON_INVALID']],
    'dead-lettered once, when processed, naming its topic and offset; not again at the restore',
  );
});

test("a persistent store of a table read from a topic is checkpointed at the group's committed offset: a restart restores only what lies past it, and joins as before", async () => {
  const { bootstrap } = testCluster();
  const t = { customers: uniqueName('pcustomers'), orders: uniqueName('porders'), out: uniqueName('porders-out') };
  const appId = uniqueName('app-table-checkpoint');
  await createTopics(bootstrap, Object.values(t).map((name) => ({ name, partitions: 1 })));
  const app = new TopologyBuilder({ appId });
  const customers = app.table(t.customers, { key: stringSerde, value: stringSerde, store: 'customers' });
  app
    .stream(t.orders, { key: stringSerde, value: stringSerde })
    .join(customers, (_k, order, customer) => `${order}:${customer}`, { value: stringSerde })
    .to(t.out);
  const compiled = compile(app);
  const rows = 3_000;
  const caughtUp = () => waitCaughtUp({ bootstrap, groupId: appId, plainTopics: [t.customers, t.orders], stableMs: 1_000 });
  const start = async (): Promise<{ worker: Worker; restored: Promise<WorkerEvent> }> => {
    const worker = new Worker(runtimeTopology(compiled), { bootstrap, appId, instanceId: 'only', stateStore: 'persistent', stateDir });
    const restored = new Promise<WorkerEvent>((resolve) => worker.on('event', (e: WorkerEvent) => e.type === 'restored' && resolve(e)));
    await worker.start();
    return { worker, restored };
  };

  await produceRecords(bootstrap, t.customers, Array.from({ length: rows }, (_, i) => record(`c${i}`, `name${i}`, Date.now())));
  const first = await start();
  await caughtUp();
  await first.worker.stop();
  const checkpoint = readCheckpoint(join(stateDir, appId, 'only', '0_0'));
  assert.equal(checkpoint?.get(`${t.customers}\u00000`), rows, 'a clean stop checkpoints the table at the committed offset of its source topic');

  await produceRecords(bootstrap, t.customers, [record('c7', 'renamed', Date.now()), record('new', 'newcomer', Date.now())]);
  const second = await start();
  try {
    const restored = await second.restored;
    assert.ok(restored.type === 'restored');
    assert.equal(restored.fromCheckpoint, 1);
    assert.equal(restored.records, 0, 'nothing to restore: the store stands where the group committed, and the 2 new rows are processed, not restored');
    await produceRecords(bootstrap, t.orders, [record('c7', 'o1', Date.now()), record('new', 'o2', Date.now()), record(`c${rows - 1}`, 'o3', Date.now())]);
    await caughtUp();
  } finally {
    await second.worker.stop();
  }
  assert.deepEqual(await values(t.out), ['o1:renamed', 'o2:newcomer', `o3:name${rows - 1}`]);
});

async function values(topic: string): Promise<string[]> {
  return (await readTopic(testCluster().bootstrap, topic, { isolation: 'read_committed' })).map((r) => r.value!.toString());
}
