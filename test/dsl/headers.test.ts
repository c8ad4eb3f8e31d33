import { test } from 'node:test';
import assert from 'node:assert/strict';
import { TopologyBuilder } from '../../src/dsl/topology-builder.ts';
import { RecordHeaders } from '../../src/dsl/headers.ts';
import { jsonSerde, stringSerde } from '../../src/serdes/index.ts';
import { TopologyTestDriver } from '../../src/testing/test-driver.ts';
import { LINEAGE } from '../../src/core/headers.ts';

interface Order {
  readonly customer: string;
  readonly amount: number;
}

function tenantTotals(): TopologyBuilder {
  const app = new TopologyBuilder({ appId: 'tenants' });
  const orders = app.stream('orders', { key: stringSerde, value: jsonSerde<Order>() });
  orders
    // Read: a header decides, and a value is made of one.
    .filter((_key, _order, ctx) => ctx.headers.string('tenant') !== 'test')
    .mapValues((order, ctx) => ({ ...order, tenant: ctx.headers.string('tenant') ?? 'none' }), { value: jsonSerde<Order & { tenant: string }>() })
    // Write: a header set here travels with the record through the repartition and to the output.
    .setHeaders((_key, order, ctx) => ctx.headers.with('amount-class', order.amount >= 100 ? 'large' : 'small'))
    .groupBy((_key, order) => order.customer, { key: stringSerde })
    .count({ name: 'orders-per-customer' })
    .toStream()
    .to('counts', { value: jsonSerde<number>() });
  orders.setHeaders(() => ({ source: 'shop' })).to('copies');
  return app;
}

test('stages read the headers of the record they process and set headers on what they emit, kept through a repartition', () => {
  const driver = new TopologyTestDriver(tenantTotals(), { partitions: 2 });
  const orders = driver.input<string, Order>('orders');
  orders.pipe('o1', { customer: 'c1', amount: 150 }, { headers: { tenant: 'acme', trace: 't-1' } });
  orders.pipe('o2', { customer: 'c1', amount: 5 }, { headers: { tenant: 'test' } });
  orders.pipe('o3', { customer: 'c2', amount: 5 }, { headers: { tenant: 'acme' } });

  const counts = driver.output<string, number>('counts').readRecords();
  assert.deepEqual(
    counts.map((r) => [r.key, r.value, r.headers]),
    [
      ['c1', 1, { tenant: 'acme', trace: 't-1', 'amount-class': 'large' }],
      ['c2', 1, { tenant: 'acme', 'amount-class': 'small' }],
    ],
  );
  // The repartition topic carries them too (the next sub-topology read them from there).
  const repartition = driver.records('tenants-orders-per-customer-repartition');
  assert.deepEqual(repartition.map((r) => r.headers.map((h) => h.key)), [['tenant', 'trace', 'amount-class'], ['tenant', 'amount-class']]);
  // A sibling branch is unaffected by another branch's setHeaders, and an object replaces every header.
  assert.deepEqual(driver.output<string, Order>('copies').readRecords().map((r) => r.headers), [{ source: 'shop' }, { source: 'shop' }, { source: 'shop' }]);
});

test('onceflow\'s lineage header is hidden from ctx.headers and read only through ctx.lineage', () => {
  const seen: { names: string[]; lineage: string | undefined }[] = [];
  const app = new TopologyBuilder({ appId: 'lineage-view' });
  app
    .stream('in', { key: stringSerde, value: stringSerde })
    .peek((_key, _value, ctx) => seen.push({ names: ctx.headers.names(), lineage: ctx.lineage }))
    .to('out');
  const driver = new TopologyTestDriver(app);
  driver.input<string, string>('in').pipeRaw(Buffer.from('k'), Buffer.from('v'), { headers: { a: '1' } });
  assert.deepEqual(seen, [{ names: ['a'], lineage: undefined }]);
  assert.ok(!driver.output('out').readRecords()[0]!.headers[LINEAGE.header]);
});

test('RecordHeaders: typed string helpers, repeated names, immutability', () => {
  const h = RecordHeaders.of({ a: '1', b: Buffer.from([0xff]) }).append('a', '2');
  assert.equal(h.string('a'), '2');
  assert.deepEqual(h.strings('a'), ['1', '2']);
  assert.deepEqual(h.bytes('b'), Buffer.from([0xff]));
  assert.equal(h.string('missing'), undefined);
  const changed = h.with('a', 'x').without('b');
  assert.deepEqual(changed.toObject(), { a: 'x' });
  assert.deepEqual(h.names(), ['a', 'b']);
  assert.equal(h.size, 3);
});
