import assert from 'node:assert/strict';
import { test } from 'node:test';
import { beginTransaction, commitTransaction, connectProducer, disconnect, initTransactions } from '../../src/kafka/clients.ts';
import { readTopic } from '../../src/kafka/read-topic.ts';
import { produceAll, prng } from '../../src/verify/orders-input.ts';
import { waitCaughtUp } from '../../src/verify/progress.ts';
import { WorkerProcess } from '../../src/verify/worker-process.ts';
import type { Customer, EnrichedOrder } from '../../processors/enrichment.ts';
import { createTopics, testCluster, uniqueName } from '../support/cluster.ts';

const PARTITIONS = 6;
const CUSTOMERS = 300;
const ORDERS = 30_000;
const KILLS = 4;
const SEGMENTS = ['gold', 'silver', 'basic'];

/**
 * An enrichment deployed on topics that already hold data: the customers table written first (one
 * committed transaction), every order after it, both keyed by customer; replicas die while they work
 * through the backlog, and each restart reads both topics from the committed offsets again.
 */
test('enrichment started on a backlog, 3 replicas, SIGKILLs while they work: every order joined once, with its customer', async () => {
  const { bootstrap } = testCluster();
  const t = { orders: uniqueName('orders'), customers: uniqueName('customers'), enriched: uniqueName('enriched') };
  const appId = uniqueName('app-enrich-backlog');
  await createTopics(bootstrap, Object.values(t).map((name) => ({ name, partitions: PARTITIONS })));
  const rand = prng(38);
  const customers = new Map<string, Customer>();
  const producer = await connectProducer({ 'bootstrap.servers': bootstrap, 'transactional.id': uniqueName('customers-writer'), 'dr_cb': false, 'partitioner': 'murmur2_random' });
  try {
    await initTransactions(producer, 30_000);
    await beginTransaction(producer);
    for (let c = 0; c < CUSTOMERS; c++) {
      const row: Customer = { customerId: `c${c}`, name: `customer ${c}`, segment: SEGMENTS[Math.floor(rand() * SEGMENTS.length)]!, version: 1 };
      customers.set(row.customerId, row);
      producer.produce(t.customers, null, Buffer.from(JSON.stringify(row)), row.customerId, Date.now());
    }
    await commitTransaction(producer, 30_000);
  } finally {
    await disconnect(producer);
  }
  const orders = Array.from({ length: ORDERS }, (_, i) => ({ orderId: `o${i}`, customerId: `c${Math.floor(rand() * CUSTOMERS)}`, amount: 1 + Math.floor(rand() * 100) }));
  await produceAll(bootstrap, t.orders, orders.map((o) => ({ key: o.customerId, value: JSON.stringify(o) })));

  const env = { ONCEFLOW_BOOTSTRAP: bootstrap, ENRICH_ORDERS: t.orders, ENRICH_CUSTOMERS: t.customers, ENRICH_ENRICHED: t.enriched, ONCEFLOW_COMMIT_INTERVAL_MS: '50', ONCEFLOW_CONSUME_BATCH_SIZE: '200' };
  const workers = new Map<string, WorkerProcess>();
  const start = (id: string): WorkerProcess => {
    const w = new WorkerProcess(id, 'test/fixtures/orders-by-customer.ts', ['--app-id', appId, '--instance-id', id], env);
    workers.set(id, w);
    return w;
  };
  let kills = 0;
  try {
    for (const id of ['a', 'b', 'c']) start(id);
    for (let k = 0; k < KILLS; k++) {
      // Each kill lands while the replicas still work through the backlog, most likely inside an open transaction.
      await new Promise((r) => setTimeout(r, 1_000 + rand() * 1_500));
      const victim = ['a', 'b', 'c'][Math.floor(rand() * 3)]!;
      const w = workers.get(victim)!;
      w.kill('SIGKILL');
      await w.exit();
      kills++;
      start(victim);
    }
    await waitCaughtUp({ bootstrap, groupId: appId, plainTopics: [t.orders], transactionalTopics: [t.customers], stableMs: 2_000, timeoutMs: 300_000 });
  } finally {
    await Promise.all([...workers.values()].map((w) => w.stop(15_000)));
  }
  const seen = new Map<string, number>();
  let wrong = 0;
  for (const r of await readTopic(bootstrap, t.enriched, { isolation: 'read_committed' })) {
    const v = JSON.parse(r.value!.toString()) as EnrichedOrder;
    seen.set(v.orderId, (seen.get(v.orderId) ?? 0) + 1);
    if (customers.get(v.customerId)?.segment !== v.segment) wrong++;
  }
  const duplicates = [...seen.values()].reduce((n, c) => n + c - 1, 0);
  const lost = orders.filter((o) => !seen.has(o.orderId)).length;
  assert.deepEqual({ kills, duplicates, lost, wrong }, { kills: KILLS, duplicates: 0, lost: 0, wrong: 0 });
});
