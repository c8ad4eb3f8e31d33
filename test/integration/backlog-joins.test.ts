import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { TopologyBuilder } from '../../src/dsl/topology-builder.ts';
import { compile } from '../../src/graph/index.ts';
import { beginTransaction, commitTransaction, connectProducer, disconnect, initTransactions } from '../../src/kafka/clients.ts';
import { readTopic } from '../../src/kafka/read-topic.ts';
import { Worker } from '../../src/runtime/worker/worker.ts';
import type { WorkerEvent } from '../../src/runtime/base/worker-events.ts';
import { jsonSerde, stringSerde } from '../../src/serdes/index.ts';
import { produceAll } from '../../src/verify/orders-input.ts';
import { waitCaughtUp } from '../../src/verify/progress.ts';
import { createTopics, testCluster, uniqueName } from '../support/cluster.ts';

const PARTITIONS = 6;
const CUSTOMERS = 500;
const ORDERS = 3_000;

interface Order {
  readonly seq: number;
  readonly customerId: string;
}

/** The customers table written first, in one committed transaction (its partitions end in a commit marker). */
async function writeCustomers(bootstrap: string, topic: string): Promise<void> {
  const producer = await connectProducer({ 'bootstrap.servers': bootstrap, 'transactional.id': uniqueName('customers-writer'), 'dr_cb': false, 'partitioner': 'murmur2_random' });
  try {
    await initTransactions(producer, 30_000);
    await beginTransaction(producer);
    for (let c = 0; c < CUSTOMERS; c++) producer.produce(topic, null, Buffer.from(JSON.stringify({ segment: `s${c % 7}` })), `c${c}`, Date.now());
    await commitTransaction(producer, 30_000);
  } finally {
    await disconnect(producer);
  }
}

function enrichmentApp(appId: string, t: { orders: string; customers: string; out: string }): TopologyBuilder {
  const app = new TopologyBuilder({ appId });
  const customers = app.table(t.customers, { key: stringSerde, value: jsonSerde<{ segment: string }>(), store: 'customers' });
  app
    .stream(t.orders, { key: stringSerde, value: jsonSerde<Order>() })
    .join(customers, (_id, order, customer) => `${order.seq}:${customer.segment}`, { name: 'enrich', value: stringSerde })
    .to(t.out);
  return app;
}

/**
 * Kafka Streams' scenario of KIP-353: an enrichment app deployed on topics that already hold data. Every
 * order is newer than every customer row, so processed in timestamp order each finds its customer.
 */
async function backlogRun(replicas: number): Promise<{ joined: number; wrong: number; duplicates: number; misses: number; events: WorkerEvent[] }> {
  const { bootstrap } = testCluster();
  const t = { orders: uniqueName('orders'), customers: uniqueName('customers'), out: uniqueName('enriched') };
  const appId = uniqueName('app-backlog');
  await createTopics(bootstrap, Object.values(t).map((name) => ({ name, partitions: PARTITIONS })));
  await writeCustomers(bootstrap, t.customers);
  await new Promise((r) => setTimeout(r, 20));
  await produceAll(bootstrap, t.orders, Array.from({ length: ORDERS }, (_, seq) => ({ key: `c${seq % CUSTOMERS}`, value: JSON.stringify({ seq, customerId: `c${seq % CUSTOMERS}` }) })));
  const compiled = compile(enrichmentApp(appId, t));
  const events: WorkerEvent[] = [];
  const workers = Array.from({ length: replicas }, (_, i) => new Worker(compiled, { bootstrap, appId, instanceId: `r${i}`, commitIntervalMs: 50 }));
  for (const w of workers) w.on('event', (e: WorkerEvent) => events.push(e));
  try {
    await Promise.all(workers.map((w) => w.start()));
    await waitCaughtUp({ bootstrap, groupId: appId, plainTopics: [t.orders], transactionalTopics: [t.customers], stableMs: 1_500, timeoutMs: 180_000 });
  } finally {
    await Promise.all(workers.map((w) => w.stop()));
  }
  const out = await readTopic(bootstrap, t.out, { isolation: 'read_committed' });
  const seen = new Map<number, number>();
  let wrong = 0;
  for (const r of out) {
    const [seq, segment] = r.value!.toString().split(':');
    seen.set(Number(seq), (seen.get(Number(seq)) ?? 0) + 1);
    if (segment !== `s${(Number(seq) % CUSTOMERS) % 7}`) wrong++;
  }
  const duplicates = [...seen.values()].reduce((n, c) => n + c - 1, 0);
  const misses = workers.reduce((n, w) => n + (w.joinMisses().get('enrich') ?? 0), 0);
  return { joined: seen.size, wrong, duplicates, misses, events };
}

describe('a join started on a backlog takes its inputs in timestamp order', { concurrency: false }, () => {
  test('table written first, orders after, one worker started on both: every order is joined', async () => {
    const { joined, wrong, duplicates, misses, events } = await backlogRun(1);
    assert.deepEqual({ joined, wrong, duplicates, misses }, { joined: ORDERS, wrong: 0, duplicates: 0, misses: 0 });
    // Nothing had to be forced: every input's lag was known and the table caught up before the orders went.
    assert.deepEqual(events.filter((e) => e.type === 'enforced-processing'), []);
  });

  test('the same backlog with 3 replicas starting together: every order is joined once', async () => {
    const { joined, wrong, duplicates } = await backlogRun(3);
    assert.deepEqual({ joined, wrong, duplicates }, { joined: ORDERS, wrong: 0, duplicates: 0 });
  });
});
