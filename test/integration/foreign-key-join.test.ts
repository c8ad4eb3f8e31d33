import assert from 'node:assert/strict';
import { test } from 'node:test';
import { compile } from '../../src/graph/index.ts';
import { produceRecords, type RecordToProduce } from '../../src/kafka/produce-records.ts';
import { readTopic } from '../../src/kafka/read-topic.ts';
import { prng } from '../../src/verify/orders-input.ts';
import { waitCaughtUp } from '../../src/verify/progress.ts';
import { WorkerProcess } from '../../src/verify/worker-process.ts';
import { enrich, orderCustomersTopology, type CustomerOrder, type EnrichedOrder, type OrderCustomer } from '../../topology/order-customers.ts';
import { createTopics, testCluster, uniqueName } from '../support/cluster.ts';

// Different partition counts on the two sides: the subscription topic must follow the customers', the response topic the orders'.
const ORDER_PARTITIONS = 3;
const CUSTOMER_PARTITIONS = 2;
const ORDERS = 150;
const CUSTOMERS = 40;
const BATCHES = 6;
const UPDATES_PER_BATCH = 300;

interface Model {
  readonly orders: Map<string, CustomerOrder>;
  readonly customers: Map<string, OrderCustomer>;
}

const record = (key: string, value: unknown): RecordToProduce => ({ key: Buffer.from(key), value: value === null ? null : Buffer.from(JSON.stringify(value)) });

/**
 * Per batch, interleaved in one topic each: orders created or moved to another customer (often one
 * that does not exist yet), orders deleted, customers renamed or re-tiered, customers deleted.
 */
function updates(rand: () => number, model: Model): { orders: RecordToProduce[]; customers: RecordToProduce[] } {
  const orders: RecordToProduce[] = [];
  const customers: RecordToProduce[] = [];
  for (let i = 0; i < UPDATES_PER_BATCH; i++) {
    if (rand() < 0.6) {
      const id = `o${Math.floor(rand() * ORDERS)}`;
      if (rand() < 0.1) {
        model.orders.delete(id);
        orders.push(record(id, null));
        continue;
      }
      const row: CustomerOrder = { customerId: `c${Math.floor(rand() * CUSTOMERS)}`, amount: Math.floor(rand() * 100) };
      model.orders.set(id, row);
      orders.push(record(id, row));
      continue;
    }
    const id = `c${Math.floor(rand() * CUSTOMERS)}`;
    if (rand() < 0.2) {
      model.customers.delete(id);
      customers.push(record(id, null));
      continue;
    }
    const row: OrderCustomer = { name: `name-${Math.floor(rand() * 1000)}`, tier: rand() < 0.5 ? 'gold' : 'basic' };
    model.customers.set(id, row);
    customers.push(record(id, row));
  }
  return { orders, customers };
}

/** The last committed value per key of an output topic (null: the key's result was deleted). */
async function lastValues(bootstrap: string, topic: string): Promise<Map<string, EnrichedOrder | null>> {
  const last = new Map<string, EnrichedOrder | null>();
  const records = await readTopic(bootstrap, topic, { isolation: 'read_committed' });
  for (const r of records.sort((a, b) => a.partition - b.partition || a.offset - b.offset)) last.set(r.key!.toString(), r.value === null ? null : (JSON.parse(r.value.toString()) as EnrichedOrder | null));
  return last;
}

/** Every key's final result next to what the model says it should be (null: none). */
function compare(got: Map<string, EnrichedOrder | null>, want: Map<string, EnrichedOrder>): { key: string; got: EnrichedOrder | null; want: EnrichedOrder | null }[] {
  const keys = new Set([...got.keys(), ...want.keys()]);
  return [...keys].sort().map((key) => ({ key, got: got.get(key) ?? null, want: want.get(key) ?? null }));
}

test('orders move between customers and both sides are deleted while a replica is SIGKILLed mid-way: every order ends joined with its current customer', async () => {
  const { bootstrap } = testCluster();
  const t = { orders: uniqueName('fk-orders'), customers: uniqueName('fk-customers'), enriched: uniqueName('fk-enriched'), all: uniqueName('fk-all') };
  const appId = uniqueName('app-fk-join');
  await createTopics(bootstrap, [
    { name: t.orders, partitions: ORDER_PARTITIONS },
    { name: t.customers, partitions: CUSTOMER_PARTITIONS },
    { name: t.enriched, partitions: ORDER_PARTITIONS },
    { name: t.all, partitions: ORDER_PARTITIONS },
  ]);
  const compiled = compile(orderCustomersTopology(t), { appId });
  const repartition = compiled.topics.filter((x) => x.kind === 'repartition').map((x) => x.name);
  const env = { ONCEFLOW_BOOTSTRAP: bootstrap, ONCEFLOW_FK_ORDERS: t.orders, ONCEFLOW_FK_CUSTOMERS: t.customers, ONCEFLOW_FK_ENRICHED: t.enriched, ONCEFLOW_FK_ALL: t.all, ONCEFLOW_COMMIT_INTERVAL_MS: '50' };
  const workers = new Map<string, WorkerProcess>();
  const start = (id: string): WorkerProcess => {
    const w = new WorkerProcess(id, 'topology/order-customers.ts', ['--app-id', appId, '--instance-id', id], env);
    workers.set(id, w);
    return w;
  };
  const rand = prng(213);
  const model: Model = { orders: new Map(), customers: new Map() };
  try {
    for (const id of ['a', 'b']) start(id);
    await Promise.all([...workers.values()].map((w) => w.waitFor((e) => e.type === 'assigned', 90_000, 'assignment')));
    for (let batch = 0; batch < BATCHES; batch++) {
      const { orders, customers } = updates(rand, model);
      if (batch !== BATCHES / 2) {
        await Promise.all([produceRecords(bootstrap, t.orders, orders), produceRecords(bootstrap, t.customers, customers)]);
        continue;
      }
      // Mid-way, with half a batch in flight: a replica dies (inside an open transaction, most likely) and comes back.
      await Promise.all([produceRecords(bootstrap, t.orders, orders.slice(0, orders.length / 2)), produceRecords(bootstrap, t.customers, customers.slice(0, customers.length / 2))]);
      const victim = workers.get('b')!;
      await victim.waitFor((e) => e.type === 'committed', 60_000, 'a commit');
      victim.kill('SIGKILL');
      await victim.exit();
      await Promise.all([produceRecords(bootstrap, t.orders, orders.slice(orders.length / 2)), produceRecords(bootstrap, t.customers, customers.slice(customers.length / 2))]);
      start('b');
    }
    await waitCaughtUp({ bootstrap, groupId: appId, plainTopics: [t.orders, t.customers], transactionalTopics: repartition, stableMs: 3_000, timeoutMs: 180_000 });
    const wantInner = new Map<string, EnrichedOrder>();
    const wantLeft = new Map<string, EnrichedOrder>();
    for (const [id, order] of model.orders) {
      const customer = model.customers.get(order.customerId) ?? null;
      wantLeft.set(id, enrich(id, order, customer));
      if (customer !== null) wantInner.set(id, enrich(id, order, customer));
    }
    const inner = compare(await lastValues(bootstrap, t.enriched), wantInner);
    const left = compare(await lastValues(bootstrap, t.all), wantLeft);
    assert.deepEqual(inner.filter((r) => !isSame(r.got, r.want)), [], 'inner join: every order with a current customer joined with it, every other result deleted');
    assert.deepEqual(left.filter((r) => !isSame(r.got, r.want)), [], 'left join: every current order, joined with its customer or null');
    console.log(`# ${BATCHES * UPDATES_PER_BATCH} updates: ${model.orders.size} current orders, ${model.customers.size} current customers, ${wantInner.size} inner results`);
  } finally {
    await Promise.all([...workers.values()].map((w) => w.stop(15_000)));
  }
});

function isSame(a: EnrichedOrder | null, b: EnrichedOrder | null): boolean {
  return JSON.stringify(a) === JSON.stringify(b);
}
