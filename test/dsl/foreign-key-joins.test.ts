import { test } from 'node:test';
import assert from 'node:assert/strict';
import { TopologyBuilder } from '../../src/dsl/topology-builder.ts';
import { compile } from '../../src/graph/index.ts';
import { JoinInputNotTableError, MissingSerdeError, SinkToOwnSourceError } from '../../src/graph/errors.ts';
import { jsonSerde, stringSerde } from '../../src/serdes/index.ts';
import { TopologyTestDriver, type TestDriverOptions } from '../../src/testing/test-driver.ts';
import { enrich, orderCustomersTopology, type CustomerOrder, type EnrichedOrder, type OrderCustomer } from '../../topology/order-customers.ts';

const order = (customerId: string, amount: number): CustomerOrder => ({ customerId, amount });
const customer = (name: string, tier = 'basic'): OrderCustomer => ({ name, tier });

function orderCustomers(opts: TestDriverOptions = {}) {
  const driver = new TopologyTestDriver(orderCustomersTopology(), { partitions: 3, ...opts });
  return {
    driver,
    orders: driver.input<string, CustomerOrder>('orders'),
    customers: driver.input<string, OrderCustomer>('customers'),
    enriched: driver.output<string, EnrichedOrder | null>('enriched-orders'),
    all: driver.output<string, EnrichedOrder | null>('all-orders'),
  };
}

test('an order joins the customer its customerId names, whichever side arrives first; a customer update reaches every order of the customer', () => {
  const { orders, customers, enriched, all } = orderCustomers();
  customers.pipe('c1', customer('Ann', 'gold'));
  orders.pipe('o1', order('c1', 5));
  orders.pipe('o2', order('c2', 7));
  assert.deepEqual(enriched.readKeyValues(), [['o1', enrich('o1', order('c1', 5), customer('Ann', 'gold'))]], 'the inner join has nothing for o2, and sends nothing for it');
  customers.pipe('c2', customer('Bob'));
  orders.pipe('o3', order('c2', 1));
  customers.pipe('c2', customer('Bob', 'gold'));
  const results = enriched.readKeyValues();
  assert.deepEqual(results.slice(0, 2), [
    ['o2', enrich('o2', order('c2', 7), customer('Bob'))],
    ['o3', enrich('o3', order('c2', 1), customer('Bob'))],
  ]);
  assert.deepEqual(
    results.slice(2).sort(([a], [b]) => a.localeCompare(b)),
    [
      ['o2', enrich('o2', order('c2', 7), customer('Bob', 'gold'))],
      ['o3', enrich('o3', order('c2', 1), customer('Bob', 'gold'))],
    ],
  );
  assert.deepEqual(all.readKeyValues().slice(0, 3), [
    ['o1', enrich('o1', order('c1', 5), customer('Ann', 'gold'))],
    ['o2', enrich('o2', order('c2', 7), null)],
    ['o2', enrich('o2', order('c2', 7), customer('Bob'))],
  ]);
});

test('an order moved to another customer takes the new customer, and the old customer no longer reaches it (unsubscribed)', () => {
  const { driver, orders, customers, enriched } = orderCustomers();
  customers.pipe('c1', customer('Ann'));
  customers.pipe('c2', customer('Bob'));
  orders.pipe('o1', order('c1', 5));
  orders.pipe('o1', order('c2', 5));
  customers.pipe('c1', customer('Ann', 'gold'));
  assert.deepEqual(enriched.readKeyValues(), [
    ['o1', enrich('o1', order('c1', 5), customer('Ann'))],
    ['o1', enrich('o1', order('c2', 5), customer('Bob'))],
  ]);
  assert.deepEqual(driver.store<string, string>('enriched-foreign-keys').entries(), [['o1', 'c2']]);
  assert.deepEqual(
    driver.store<{ foreignKey: string; key: string }, Buffer>('enriched-subscriptions').entries().map(([k]) => k),
    [{ foreignKey: 'c2', key: 'o1' }],
  );
});

test('inner join: moving an order to a customer that does not exist deletes its result; left join: the customer fields turn null', () => {
  const { orders, customers, enriched, all } = orderCustomers();
  customers.pipe('c1', customer('Ann'));
  orders.pipe('o1', order('c1', 5));
  orders.pipe('o1', order('c9', 5));
  assert.deepEqual(enriched.readKeyValues(), [
    ['o1', enrich('o1', order('c1', 5), customer('Ann'))],
    ['o1', null],
  ]);
  assert.deepEqual(all.readKeyValues(), [
    ['o1', enrich('o1', order('c1', 5), customer('Ann'))],
    ['o1', enrich('o1', order('c9', 5), null)],
  ]);
});

test('tombstones: a deleted order deletes its result; a deleted customer deletes the inner results and nulls the left ones', () => {
  const { driver, orders, customers, enriched, all } = orderCustomers();
  customers.pipe('c1', customer('Ann'));
  orders.pipe('o1', order('c1', 5));
  orders.pipe('o2', order('c1', 6));
  enriched.readKeyValues();
  all.readKeyValues();
  orders.pipe('o2', null);
  assert.deepEqual(enriched.readKeyValues(), [['o2', null]]);
  assert.deepEqual(all.readKeyValues(), [['o2', null]]);
  customers.pipe('c1', null);
  assert.deepEqual(enriched.readKeyValues(), [['o1', null]]);
  assert.deepEqual(all.readKeyValues(), [['o1', enrich('o1', order('c1', 5), null)]]);
  customers.pipe('c1', customer('Ann', 'gold'));
  assert.deepEqual(enriched.readKeyValues(), [['o1', enrich('o1', order('c1', 5), customer('Ann', 'gold'))]], 'the order stays subscribed across its customer being deleted');
  assert.deepEqual(driver.store('enriched-foreign-keys').entries(), [['o1', 'c1']], 'the deleted order left the store');
  assert.equal(driver.store('enriched-subscriptions').entries().length, 1, 'and unsubscribed');
  orders.pipe('o3', null);
  assert.deepEqual(all.readKeyValues(), [['o1', enrich('o1', order('c1', 5), customer('Ann', 'gold'))], ['o3', null]], 'a tombstone for an unknown order deletes a result that was never there, as Kafka Streams');
});

test('an order without a customerId: no subscription; the inner join deletes its result, the left join joins it with null at once', () => {
  const app = new TopologyBuilder({ appId: 'nullable-fk' });
  const orders = app.table('orders', { key: stringSerde, value: jsonSerde<{ customerId: string | null }>() });
  const customers = app.table('customers', { key: stringSerde, value: jsonSerde<OrderCustomer>() });
  const out = { value: jsonSerde<string>({ nullable: true }) };
  orders.join(customers, (o) => o.customerId, (_id, _o, c) => c.name, { name: 'inner' }).toStream().to('inner', out);
  orders.leftJoin(customers, (o) => o.customerId, (_id, _o, c) => c?.name ?? 'nobody', { name: 'left' }).toStream().to('left', out);
  const driver = new TopologyTestDriver(app);
  driver.input<string, OrderCustomer>('customers').pipe('c1', customer('Ann'));
  const input = driver.input<string, { customerId: string | null }>('orders');
  input.pipe('o1', { customerId: 'c1' });
  input.pipe('o1', { customerId: null });
  assert.deepEqual(driver.output<string, string | null>('inner').readKeyValues(), [['o1', 'Ann'], ['o1', null]]);
  assert.deepEqual(driver.output<string, string | null>('left').readKeyValues(), [['o1', 'Ann'], ['o1', 'nobody']]);
  assert.deepEqual(driver.store('inner-subscriptions').entries(), [], 'o1 unsubscribed from c1');
  assert.equal(driver.records('nullable-fk-inner-subscription-repartition').length, 2, 'a subscription, an unsubscription, nothing for the null foreign key');
});

test('an out-of-order and a late record are joined like any other (tables keep the latest by offset); results carry the timestamp of the record that caused them', () => {
  const { orders, customers, enriched } = orderCustomers();
  customers.pipe('c1', customer('Ann'), { timestamp: 1_000 });
  orders.pipe('o1', order('c1', 5), { timestamp: 500 });
  customers.pipe('c1', customer('Ann', 'gold'), { timestamp: 10 });
  orders.pipe('o2', order('c1', 3), { timestamp: 2_000 });
  orders.pipe('o3', order('c1', 4), { timestamp: 1 });
  const results = enriched.readRecords().map((r) => [r.key, r.value?.tier, r.timestamp]);
  assert.deepEqual(results, [
    ['o1', 'basic', 500],
    ['o1', 'gold', 10],
    ['o2', 'gold', 2_000],
    ['o3', 'gold', 1],
  ]);
});

test('an answer to an older value of the order is dropped: a customer update racing the order moving away does not join the moved order', () => {
  const { driver, orders, customers, enriched } = orderCustomers({ autoCommit: false });
  customers.pipe('c1', customer('Ann'));
  customers.pipe('c2', customer('Bob'));
  orders.pipe('o1', order('c1', 5));
  driver.commit();
  assert.deepEqual(enriched.readKeyValues(), [['o1', enrich('o1', order('c1', 5), customer('Ann'))]]);
  // One transaction: c1's update answers o1's old subscription while o1 moves to c2.
  customers.pipe('c1', customer('Ann', 'gold'));
  orders.pipe('o1', order('c2', 5));
  driver.commit();
  assert.deepEqual(enriched.readKeyValues(), [['o1', enrich('o1', order('c2', 5), customer('Bob'))]]);
  assert.equal(driver.metrics().staleVersionsDropped, 2, 'one stale answer dropped by each of the two joins');
});

test('an aborted transaction leaves no subscription behind; redelivered, the join ends where it would have', () => {
  const { driver, orders, customers, enriched } = orderCustomers({ autoCommit: false });
  customers.pipe('c1', customer('Ann'));
  customers.pipe('c2', customer('Bob'));
  orders.pipe('o1', order('c1', 5));
  driver.commit();
  enriched.readKeyValues();
  orders.pipe('o1', order('c2', 5));
  driver.abort({ redeliver: true });
  driver.commit();
  assert.deepEqual(enriched.readKeyValues(), [['o1', enrich('o1', order('c2', 5), customer('Bob'))]]);
  assert.deepEqual(
    driver.store<{ foreignKey: string; key: string }, Buffer>('enriched-subscriptions').entries().map(([k]) => k),
    [{ foreignKey: 'c2', key: 'o1' }],
  );
});

test('compile: the subscription topic is co-partitioned with the right table, the response topic with the left; both are repartition topics (event time, never trimmed)', () => {
  const compiled = compile(orderCustomersTopology());
  const topics = new Map(compiled.resolvePartitions({ orders: 3, customers: 2 }).topics.map((t) => [t.name, t]));
  assert.equal(topics.get('order-customers-enriched-subscription-repartition')?.partitions, 2);
  assert.equal(topics.get('order-customers-enriched-response-repartition')?.partitions, 3);
  assert.equal(topics.get('order-customers-enriched-subscriptions-changelog')?.partitions, 2);
  assert.equal(topics.get('order-customers-enriched-foreign-keys-changelog')?.partitions, 3);
  for (const name of ['order-customers-enriched-subscription-repartition', 'order-customers-all-response-repartition']) {
    assert.equal(topics.get(name)?.kind, 'repartition');
    assert.equal(topics.get(name)?.config?.['retention.ms'], '-1');
  }
  assert.deepEqual(
    compiled.subtopologies.map((s) => s.stores),
    [
      ['orders', 'enriched-foreign-keys', 'all-foreign-keys'],
      ['customers', 'enriched-subscriptions', 'all-subscriptions'],
    ],
  );
});

test('compile: a foreign-key join needs the value serde of both tables (answers are matched by a hash of the left value)', () => {
  const app = new TopologyBuilder({ appId: 'no-serde' });
  const orders = app.table('orders', { key: stringSerde, value: jsonSerde<CustomerOrder>() }).mapValues((o) => o);
  const customers = app.table('customers', { key: stringSerde, value: jsonSerde<OrderCustomer>() });
  orders.join(customers, (o) => o.customerId, (_k, o) => o.amount).toStream().to('out', { value: jsonSerde<number>() });
  assert.throws(() => compile(app), MissingSerdeError);
});

test('compile: a table joined with itself by a foreign key is refused (its subscriptions would come back to the sub-topology that sent them); the unmaterialized result is not a table to filter', () => {
  const self = new TopologyBuilder({ appId: 'self-fk' });
  const employees = self.table('employees', { key: stringSerde, value: jsonSerde<{ manager: string }>() });
  employees.join(employees, (e) => e.manager, (_k, e) => e.manager).toStream().to('out', { value: jsonSerde<string>() });
  assert.throws(() => compile(self), SinkToOwnSourceError);

  const app = new TopologyBuilder({ appId: 'filtered-fk' });
  const orders = app.table('orders', { key: stringSerde, value: jsonSerde<CustomerOrder>() });
  const customers = app.table('customers', { key: stringSerde, value: jsonSerde<OrderCustomer>() });
  orders
    .join(customers, (o) => o.customerId, (_k, o) => o.amount)
    .filter((_k, amount) => amount > 10)
    .toStream()
    .to('out', { value: jsonSerde<number>() });
  assert.throws(() => compile(app), JoinInputNotTableError);
});

test("compile: an unnamed foreign-key join's stages, stores and topics get Kafka Streams' KTABLE-FK-JOIN names", () => {
  const app = new TopologyBuilder({ appId: 'unnamed' });
  const orders = app.table('orders', { key: stringSerde, value: jsonSerde<CustomerOrder>() });
  const customers = app.table('customers', { key: stringSerde, value: jsonSerde<OrderCustomer>() });
  orders.join(customers, (o) => o.customerId, (_k, _o, c) => c.name).toStream().to('out', { value: stringSerde });
  const compiled = compile(app);
  const byKind = (kind: string) => [...compiled.nodes.values()].filter((n) => n.kind === kind).map((n) => n.name);
  assert.deepEqual(
    [byKind('fkSubscribe'), byKind('fkSubscriptionJoin'), byKind('fkResponseJoin')],
    [['KTABLE-FK-JOIN-SUBSCRIPTION-REGISTRATION-0000000004'], ['KTABLE-FK-JOIN-SUBSCRIPTION-PROCESSOR-0000000005'], ['KTABLE-FK-JOIN-OUTPUT-0000000006']],
  );
  assert.deepEqual(
    compiled.topics.filter((t) => t.kind === 'repartition').map((t) => t.name),
    ['unnamed-KTABLE-FK-JOIN-0000000006-subscription-repartition', 'unnamed-KTABLE-FK-JOIN-0000000006-response-repartition'],
  );
  assert.deepEqual([...compiled.stores.keys()].filter((s) => s.includes('FK-JOIN')), ['KTABLE-FK-JOIN-0000000006-foreign-keys', 'KTABLE-FK-JOIN-0000000006-subscriptions']);
});

test('a materialized result (store) is a table: filter reads its rows, the store holds each order’s current result, a deleted result leaves it', () => {
  const app = new TopologyBuilder({ appId: 'materialized' });
  const orders = app.table('orders', { key: stringSerde, value: jsonSerde<CustomerOrder>() });
  const customers = app.table('customers', { key: stringSerde, value: jsonSerde<OrderCustomer>() });
  orders
    .join(customers, (o) => o.customerId, (id, o, c) => enrich(String(id), o, c), { name: 'enriched', store: 'enriched-rows', value: jsonSerde<EnrichedOrder>() })
    .filter((_id, e) => e.tier === 'gold')
    .toStream()
    .to('gold-orders', { value: jsonSerde<EnrichedOrder>({ nullable: true }) });
  const driver = new TopologyTestDriver(app, { partitions: 2 });
  driver.input<string, OrderCustomer>('customers').pipe('c1', customer('Ann', 'gold'));
  driver.input<string, OrderCustomer>('customers').pipe('c2', customer('Bob'));
  const input = driver.input<string, CustomerOrder>('orders');
  input.pipe('o1', order('c1', 5));
  input.pipe('o2', order('c2', 6));
  input.pipe('o1', order('c2', 5));
  assert.deepEqual(driver.output<string, EnrichedOrder | null>('gold-orders').readKeyValues(), [
    ['o1', enrich('o1', order('c1', 5), customer('Ann', 'gold'))],
    ['o2', null],
    ['o1', null],
  ]);
  assert.deepEqual(driver.store<string, EnrichedOrder>('enriched-rows').entries().sort(), [
    ['o1', enrich('o1', order('c2', 5), customer('Bob'))],
    ['o2', enrich('o2', order('c2', 6), customer('Bob'))],
  ]);
  driver.input<string, OrderCustomer>('customers').pipe('c2', null);
  assert.deepEqual(driver.store('enriched-rows').entries(), []);
});
