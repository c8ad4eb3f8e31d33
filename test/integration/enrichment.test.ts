import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { TopologyBuilder } from '../../src/dsl/topology-builder.ts';
import { compile } from '../../src/graph/index.ts';
import { readTopic } from '../../src/kafka/read-topic.ts';
import { Worker } from '../../src/runtime/worker/worker.ts';
import { runtimeTopology } from '../../src/runtime/task/worker-topology.ts';
import { jsonSerde, stringSerde } from '../../src/serdes/index.ts';
import { produceAll, prng, type InputRecord } from '../../src/verify/orders-input.ts';
import { waitCaughtUp } from '../../src/verify/progress.ts';
import { WorkerProcess } from '../../src/verify/worker-process.ts';
import { enrichmentTopology } from '../../topology/enrichment.ts';
import type { Customer, EnrichedOrder, EnrichmentOrder } from '../../processors/enrichment.ts';
import { createTopics, testCluster, uniqueName } from '../support/cluster.ts';

const PARTITIONS = 3;
const CUSTOMERS = 30;
const SEGMENTS = ['gold', 'silver', 'basic'];
const EPOCHS = 5;
const ORDERS_PER_EPOCH = 400;

/**
 * The input in epochs: customer updates, then orders. The next epoch's updates are produced only once
 * the workers have processed every order before them, so each order's customer row is the one its
 * epoch's updates left, whatever the kills did to the processing in between.
 */
function customerUpdates(epoch: number, rand: () => number, versions: Map<string, Customer>): InputRecord[] {
  const out: InputRecord[] = [];
  for (let c = 0; c < CUSTOMERS; c++) {
    if (epoch > 0 && rand() < 0.6) continue;
    const customerId = `c${c}`;
    const previous = versions.get(customerId);
    const row: Customer = { customerId, name: `customer ${c}`, segment: SEGMENTS[Math.floor(rand() * SEGMENTS.length)]!, version: (previous?.version ?? 0) + 1 };
    versions.set(customerId, row);
    out.push({ key: customerId, value: JSON.stringify(row) });
  }
  return out;
}

function orders(epoch: number, rand: () => number): EnrichmentOrder[] {
  return Array.from({ length: ORDERS_PER_EPOCH }, (_, i) => ({ orderId: `o${epoch}-${i}`, customerId: `c${Math.floor(rand() * CUSTOMERS)}`, amount: 1 + Math.floor(rand() * 100) }));
}

describe('enrichment: orders joined with a customers table on the real broker', { concurrency: false }, () => {
  test('3 replicas, 5 SIGKILLs while customer updates and orders interleave: every order joined once, with the customer row of its epoch', async () => {
    const { bootstrap } = testCluster();
    const t = { orders: uniqueName('orders'), customers: uniqueName('customers'), enriched: uniqueName('enriched'), totals: uniqueName('totals') };
    const appId = uniqueName('app-enrich');
    await createTopics(bootstrap, Object.values(t).map((name) => ({ name, partitions: PARTITIONS })));
    const env = { ONCEFLOW_BOOTSTRAP: bootstrap, ONCEFLOW_ENRICH_ORDERS: t.orders, ONCEFLOW_ENRICH_CUSTOMERS: t.customers, ONCEFLOW_ENRICH_ENRICHED: t.enriched, ONCEFLOW_ENRICH_TOTALS: t.totals, ONCEFLOW_COMMIT_INTERVAL_MS: '50' };
    const compiled = compile(enrichmentTopology(t), { appId });
    const repartition = compiled.topics.filter((x) => x.kind === 'repartition').map((x) => x.name);
    const workers = new Map<string, WorkerProcess>();
    const start = (id: string): WorkerProcess => {
      const w = new WorkerProcess(id, 'topology/enrichment.ts', ['--app-id', appId, '--instance-id', id], env);
      workers.set(id, w);
      return w;
    };
    const caughtUp = () => waitCaughtUp({ bootstrap, groupId: appId, plainTopics: [t.orders, t.customers], transactionalTopics: repartition, stableMs: 1_000, timeoutMs: 180_000 });
    const rand = prng(22);
    const versions = new Map<string, Customer>();
    const expected = new Map<string, EnrichedOrder>();
    let kills = 0;
    try {
      for (const id of ['a', 'b', 'c']) start(id);
      await Promise.all([...workers.values()].map((w) => w.waitFor((e) => e.type === 'assigned', 90_000, 'assignment')));
      for (let epoch = 0; epoch < EPOCHS; epoch++) {
        await produceAll(bootstrap, t.customers, customerUpdates(epoch, rand, versions));
        await caughtUp();
        const batch = orders(epoch, rand);
        for (const o of batch) {
          const c = versions.get(o.customerId)!;
          expected.set(o.orderId, { ...o, segment: c.segment, customerVersion: c.version });
        }
        const records = batch.map((o) => ({ key: o.orderId, value: JSON.stringify(o) }));
        await produceAll(bootstrap, t.orders, records.slice(0, records.length / 2));
        // A replica dies mid-stream (inside an open transaction, most likely) and comes back.
        const victim = ['a', 'b', 'c'][Math.floor(rand() * 3)]!;
        await workers.get(victim)!.waitFor((e) => e.type === 'committed', 60_000, 'a commit');
        workers.get(victim)!.kill('SIGKILL');
        await workers.get(victim)!.exit();
        kills++;
        await produceAll(bootstrap, t.orders, records.slice(records.length / 2));
        start(victim);
        await caughtUp();
      }
      const out = await readTopic(bootstrap, t.enriched, { isolation: 'read_committed' });
      const seen = new Map<string, number>();
      let wrong = 0;
      const examples: string[] = [];
      for (const r of out) {
        const v = JSON.parse(r.value!.toString()) as EnrichedOrder;
        seen.set(v.orderId, (seen.get(v.orderId) ?? 0) + 1);
        const want = expected.get(v.orderId);
        if (!want || want.segment !== v.segment || want.customerVersion !== v.customerVersion || want.amount !== v.amount) {
          wrong++;
          if (examples.length < 5) examples.push(`${JSON.stringify(v)} expected ${JSON.stringify(want)}`);
        }
      }
      const duplicates = [...seen.values()].reduce((n, c) => n + (c - 1), 0);
      const lost = [...expected.keys()].filter((id) => !seen.has(id)).length;
      assert.deepEqual({ kills, duplicates, lost, wrong }, { kills: EPOCHS, duplicates: 0, lost: 0, wrong: 0 }, examples.join('\n'));
      const totals = new Map<string, number>();
      for (const r of await readTopic(bootstrap, t.totals, { isolation: 'read_committed' })) totals.set(r.key!.toString(), JSON.parse(r.value!.toString()) as number);
      const wantTotals = new Map<string, number>();
      for (const o of expected.values()) wantTotals.set(o.segment, (wantTotals.get(o.segment) ?? 0) + o.amount);
      assert.deepEqual(Object.fromEntries([...totals].sort()), Object.fromEntries([...wantTotals].sort()));
    } finally {
      await Promise.all([...workers.values()].map((w) => w.stop(15_000)));
    }
  });

  test('a join over source topics with different partition counts stops the worker at start with CO_PARTITION_MISMATCH', async () => {
    const { bootstrap } = testCluster();
    const orders = uniqueName('orders');
    const customers = uniqueName('customers');
    const out = uniqueName('out');
    await createTopics(bootstrap, [
      { name: orders, partitions: 4 },
      { name: customers, partitions: 2 },
      { name: out, partitions: 1 },
    ]);
    const appId = uniqueName('app-copart');
    const app = new TopologyBuilder({ appId });
    const table = app.table(customers, { key: stringSerde, value: jsonSerde<Customer>() });
    app
      .stream(orders, { key: stringSerde, value: jsonSerde<EnrichmentOrder>() })
      .join(table, (_id, o, c) => `${o.orderId}:${c.segment}`, { name: 'by-customer', value: stringSerde })
      .to(out);
    const worker = new Worker(runtimeTopology(compile(app)), { bootstrap, appId, instanceId: 'only' });
    await assert.rejects(worker.start(), (e: unknown) => {
      const err = e as { code?: string; message: string };
      assert.equal(err.code, 'CO_PARTITION_MISMATCH');
      assert.ok(err.message.includes(`"${orders}" has 4`) && err.message.includes(`"${customers}" has 2`), err.message);
      return true;
    });
  });
});
