import { test } from 'node:test';
import assert from 'node:assert/strict';
import { TopologyTestDriver } from '../../src/testing/test-driver.ts';
import { ordersTopology, ORDERS_DEFAULTS } from '../../topology/orders.ts';
import ordersDefault from '../../topology/orders.ts';
import type { Order } from '../../processors/orders.ts';

const HOUR = 3_600_000;

function order(eventId: string, orderId: string, customerId: string, status: Order['status'], version: number, amount: number): Order {
  return { eventId, orderId, customerId, status, version, amount };
}

function setup(partitions = 1) {
  const driver = new TopologyTestDriver(ordersTopology(), { partitions });
  const input = driver.input<string, Order>(ORDERS_DEFAULTS.input);
  const output = driver.output<string, number>(ORDERS_DEFAULTS.output);
  const send = (o: Order, timestamp = 0) => input.pipe(o.orderId, o, { timestamp });
  return { driver, input, output, send };
}

test('sums the paid amounts per customer', () => {
  const { output, send } = setup();
  send(order('e1', 'o1', 'alice', 'PAID', 1, 10));
  send(order('e2', 'o2', 'alice', 'PAID', 1, 15));
  send(order('e3', 'o3', 'bob', 'PAID', 1, 7));
  assert.deepEqual(output.readKeyValues(), [['alice', 10], ['alice', 25], ['bob', 7]]);
});

test('an order counts once, with its latest amount, and stops counting when it leaves PAID', () => {
  const { output, send } = setup();
  send(order('e1', 'o1', 'alice', 'CREATED', 1, 10));
  send(order('e2', 'o1', 'alice', 'PAID', 2, 10));
  send(order('e3', 'o1', 'alice', 'PAID', 3, 12));
  send(order('e4', 'o2', 'alice', 'PAID', 1, 5));
  send(order('e5', 'o1', 'alice', 'REFUNDED', 4, 12));
  assert.deepEqual(output.readValues(), [0, 10, 12, 17, 5]);
});

test('a redelivered event is dropped while its id is remembered, and counted again after the TTL', () => {
  const { driver, output, send } = setup();
  const paid = order('e1', 'o1', 'alice', 'PAID', 1, 10);
  send(paid, 0);
  send(paid, HOUR - 1);
  assert.deepEqual(output.readKeyValues(), [['alice', 10]]);
  assert.equal(driver.metrics().duplicatesDropped, 1);
  assert.deepEqual(driver.store<string, number>('order-events-seen').get('e1'), 0);

  // past the TTL the id is forgotten (and its changelog entry tombstoned); the version guard still
  // keeps the order from being counted twice
  send(order('e9', 'o9', 'bob', 'PAID', 1, 1), HOUR);
  assert.equal(driver.store<string, number>('order-events-seen').get('e1'), undefined);
  const tomb = driver.records('orders-order-events-seen-changelog').filter((r) => r.key?.toString() === 'e1');
  assert.deepEqual(tomb.map((r) => r.value?.toString() ?? null), ['0', null]);
  send(paid, HOUR + 1);
  assert.equal(driver.metrics().duplicatesDropped, 1);
  assert.equal(driver.metrics().staleVersionsDropped, 1);
  assert.deepEqual(output.readKeyValues(), [['bob', 1]]);
});

test('an out-of-order older version does not overwrite a newer status', () => {
  const { driver, output, send } = setup();
  send(order('e3', 'o1', 'alice', 'CANCELLED', 3, 10));
  send(order('e2', 'o1', 'alice', 'PAID', 2, 10));
  assert.deepEqual(output.readKeyValues(), [['alice', 0]]);
  assert.equal(driver.metrics().staleVersionsDropped, 1);
  assert.equal(driver.store<string, number>('order-versions').get('o1'), 3);
});

test('undecodable JSON goes to the dead-letter topic with the original bytes and processing goes on', () => {
  const { driver, input, output, send } = setup();
  input.pipeRaw(Buffer.from('o1'), Buffer.from('{not json'), { timestamp: 5, headers: { trace: 't-1' } });
  send(order('e1', 'o1', 'alice', 'PAID', 1, 10));
  const [dl, ...rest] = driver.deadLetters();
  assert.equal(rest.length, 0);
  assert.equal(dl!.code, 'JSON_INVALID');
  assert.equal(dl!.value?.toString(), '{not json');
  assert.equal(dl!.key?.toString(), 'o1');
  assert.equal(dl!.timestamp, 5);
  assert.equal(dl!.headers.trace, 't-1');
  assert.deepEqual(dl!.source, { topic: 'orders', partition: 0, offset: 0 });
  assert.equal(dl!.stage, 'KSTREAM-SOURCE-0000000000');
  assert.match(dl!.message, /JSON/);
  assert.deepEqual(output.readKeyValues(), [['alice', 10]]);
});

test('on four partitions the totals are the same as on one', () => {
  const events: Order[] = [];
  for (let i = 0; i < 40; i++) events.push(order(`e${i}`, `o${i % 13}`, `c${(i % 13) % 5}`, i % 3 === 0 ? 'CREATED' : 'PAID', i, i));
  const finals = (partitions: number) => {
    const { output, send } = setup(partitions);
    for (const e of events) send(e);
    send(events[7]!); // a duplicate
    const last = new Map<string, number>();
    for (const [k, v] of output.readKeyValues()) last.set(k, v);
    return last;
  };
  const one = finals(1);
  assert.deepEqual(finals(4), one);
  // expected by hand: per order, the highest version; counted if PAID
  const latest = new Map<string, Order>();
  for (const e of events) if ((latest.get(e.orderId)?.version ?? -1) < e.version) latest.set(e.orderId, e);
  const expected = new Map<string, number>();
  for (const o of latest.values()) if (o.status === 'PAID') expected.set(o.customerId, (expected.get(o.customerId) ?? 0) + o.amount);
  for (const [c, total] of expected) assert.equal(one.get(c), total);
});

test('the default export is the topology with default topic names', () => {
  const driver = new TopologyTestDriver(ordersDefault);
  assert.deepEqual(driver.compiled.topics.filter((t) => !t.internal).map((t) => t.name), ['orders', 'customer-paid-totals']);
  const custom = new TopologyTestDriver(ordersTopology({ input: 'in-x', output: 'out-x', appId: 'app-x' }));
  assert.deepEqual(custom.compiled.topics.map((t) => t.name), ['in-x', 'out-x', 'app-x-order-versions-repartition', 'app-x-customer-paid-repartition', 'app-x-order-events-seen-changelog', 'app-x-order-versions-changelog', 'app-x-customer-paid-changelog', 'app-x-dlq']);
});
