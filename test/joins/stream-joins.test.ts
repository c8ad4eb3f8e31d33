import { test } from 'node:test';
import assert from 'node:assert/strict';
import { TopologyBuilder } from '../../src/dsl/topology-builder.ts';
import { JoinWindows } from '../../src/dsl/windows.ts';
import { jsonSerde, stringSerde } from '../../src/serdes/index.ts';
import { TopologyTestDriver } from '../../src/testing/test-driver.ts';

function clicksAndViews(mode: 'inner' | 'left' | 'outer', windows: JoinWindows) {
  const app = new TopologyBuilder({ appId: 'ss' });
  const views = app.stream('views', { key: stringSerde, value: stringSerde });
  const clicks = app.stream('clicks', { key: stringSerde, value: stringSerde });
  const show = (_k: string | null, v: string | null, c: string | null) => `${v ?? '-'}+${c ?? '-'}`;
  const opts = { value: stringSerde, store: 'view-click' };
  const joined = mode === 'inner' ? views.join(clicks, show, windows, opts) : mode === 'left' ? views.leftJoin(clicks, show, windows, opts) : views.outerJoin(clicks, show, windows, opts);
  joined.to('joined');
  return app;
}

test('inner stream-stream join: records within the window join at once, in either order; others never', () => {
  const driver = new TopologyTestDriver(clicksAndViews('inner', JoinWindows.of(10)));
  const views = driver.input<string, string>('views');
  const clicks = driver.input<string, string>('clicks');
  views.pipe('u', 'v1', { timestamp: 100 });
  clicks.pipe('u', 'c1', { timestamp: 105 });
  clicks.pipe('u', 'c2', { timestamp: 111 });
  views.pipe('u', 'v2', { timestamp: 112 });
  clicks.pipe('x', 'c3', { timestamp: 112 });
  driver.advanceStreamTime(1000);
  assert.deepEqual(driver.output<string, string>('joined').readKeyValues(), [
    ['u', 'v1+c1'],
    ['u', 'v2+c1'],
    ['u', 'v2+c2'],
  ]);
  assert.equal(driver.store('view-click-this').entries().length, 0, 'closed windows leave the stores');
  assert.equal(driver.store('view-click-other').entries().length, 0);
});

test('left stream-stream join: an unmatched left record is emitted with null only when its window closes', () => {
  const driver = new TopologyTestDriver(clicksAndViews('left', JoinWindows.of(10).grace(5)));
  const views = driver.input<string, string>('views');
  const clicks = driver.input<string, string>('clicks');
  const out = driver.output<string, string>('joined');
  views.pipe('u', 'v1', { timestamp: 100 });
  views.pipe('w', 'v2', { timestamp: 100 });
  clicks.pipe('z', 'c0', { timestamp: 114 });
  assert.deepEqual(out.readValues(), [], 'no early left result while a click may still come');
  clicks.pipe('u', 'c1', { timestamp: 110 });
  assert.deepEqual(out.readValues(), ['v1+c1'], 'an out-of-order click within grace still joins');
  clicks.pipe('z', 'c9', { timestamp: 116 });
  assert.deepEqual(out.readValues(), ['v2+-'], 'window 100+10+5 closed: the unmatched view, and only it, is emitted');
  assert.equal(out.readRecords().length, 0);
});

test('outer stream-stream join: unmatched records of both sides come out with null when their windows close', () => {
  const driver = new TopologyTestDriver(clicksAndViews('outer', JoinWindows.of(5)));
  const views = driver.input<string, string>('views');
  const clicks = driver.input<string, string>('clicks');
  const out = driver.output<string, string>('joined');
  views.pipe('a', 'v1', { timestamp: 10 });
  clicks.pipe('b', 'c1', { timestamp: 12 });
  clicks.pipe('a', 'c2', { timestamp: 14 });
  assert.deepEqual(out.readValues(), ['v1+c2']);
  driver.advanceStreamTime(100);
  assert.deepEqual(out.readRecords().map((r) => [r.key, r.value, r.timestamp]), [['b', '-+c1', 12]]);
});

test('a record later than the grace period is dropped and counted, not joined', () => {
  const driver = new TopologyTestDriver(clicksAndViews('left', JoinWindows.of(10).grace(5)));
  const views = driver.input<string, string>('views');
  const clicks = driver.input<string, string>('clicks');
  clicks.pipe('u', 'c1', { timestamp: 100 });
  clicks.pipe('z', 'c2', { timestamp: 200 });
  views.pipe('u', 'late', { timestamp: 104 });
  driver.advanceStreamTime(1000);
  assert.deepEqual(driver.output<string, string>('joined').readValues(), []);
  assert.equal(driver.metrics().lateRecordsDropped, 1);
});

test('the join window stores are changelogged in the transaction and rolled back on abort', () => {
  const driver = new TopologyTestDriver(clicksAndViews('left', JoinWindows.of(10)), { autoCommit: false });
  const views = driver.input<string, string>('views');
  const clicks = driver.input<string, string>('clicks');
  views.pipe('u', 'v1', { timestamp: 100 });
  driver.commit();
  clicks.pipe('u', 'c1', { timestamp: 101 });
  driver.abort();
  clicks.pipe('z', 'c2', { timestamp: 200 });
  driver.commit();
  assert.deepEqual(driver.output<string, string>('joined').readValues(), ['v1+-'], 'the aborted match never happened');
  const changelog = driver.records('ss-view-click-this-changelog');
  assert.equal(changelog.length, 2, 'the view was logged, then its removal when its window closed');
  assert.equal(changelog[1]!.value, null);
});

test('stream join with a global table by a key the stream computes, with tombstones', () => {
  const app = new TopologyBuilder({ appId: 'g' });
  const products = app.globalTable('products', { key: stringSerde, value: jsonSerde<{ name: string }>(), store: 'products' });
  const orders = app.stream('orders', { key: stringSerde, value: jsonSerde<{ product: string; qty: number }>() });
  orders.join(products, (_id, o) => o.product, (_id, o, p) => `${o.qty} x ${p.name}`, { value: stringSerde }).to('inner');
  orders.leftJoin(products, (_id, o) => o.product, (_id, o, p) => `${o.qty} x ${p?.name ?? '?'}`, { value: stringSerde }).to('left');
  const driver = new TopologyTestDriver(app, { partitions: 4 });
  assert.deepEqual(driver.compiled.copartitionGroups, [], 'a global table needs no co-partitioning');
  const productsIn = driver.input<string, { name: string }>('products');
  const ordersIn = driver.input<string, { product: string; qty: number }>('orders');
  productsIn.pipe('p1', { name: 'pen' });
  ordersIn.pipe('o1', { product: 'p1', qty: 2 });
  ordersIn.pipe('o2', { product: 'p2', qty: 1 });
  productsIn.pipe('p1', null);
  ordersIn.pipe('o3', { product: 'p1', qty: 5 });
  assert.deepEqual(driver.output<string, string>('inner').readKeyValues(), [['o1', '2 x pen']]);
  assert.deepEqual(driver.output<string, string>('left').readValues(), ['2 x pen', '1 x ?', '5 x ?']);
});

test('a join over topics with different partition counts is a CoPartitionError naming both topics and counts', () => {
  const app = new TopologyBuilder({ appId: 'cp' });
  const t = app.table('customers', { key: stringSerde, value: stringSerde });
  app.stream('orders', { key: stringSerde, value: stringSerde }).join(t, (_k, o, c) => `${o}/${c}`, { name: 'enrich', value: stringSerde }).to('out');
  const driver = new TopologyTestDriver(app);
  assert.deepEqual(driver.compiled.copartitionGroups.map((g) => [g.join, [...g.topics].sort()]), [['enrich', ['customers', 'orders']]]);
  assert.throws(
    () => driver.compiled.resolvePartitions({ orders: 4, customers: 2 }),
    (e: unknown) => {
      const err = e as { code?: string; message: string; topics?: unknown };
      assert.equal(err.code, 'CO_PARTITION_MISMATCH');
      assert.match(err.message, /enrich/);
      assert.match(err.message, /"orders" has 4/);
      assert.match(err.message, /"customers" has 2/);
      return true;
    },
  );
  assert.doesNotThrow(() => driver.compiled.resolvePartitions({ orders: 3, customers: 3 }));
});

test('a stream-stream join result carries the later of its two records\' timestamps, whichever side came second (as Kafka Streams stamps it)', () => {
  const driver = new TopologyTestDriver(clicksAndViews('inner', JoinWindows.of(10).grace(10)));
  const views = driver.input<string, string>('views');
  const clicks = driver.input<string, string>('clicks');
  clicks.pipe('u', 'c1', { timestamp: 105 });
  views.pipe('u', 'v1', { timestamp: 100 });
  views.pipe('u', 'v2', { timestamp: 108 });
  clicks.pipe('u', 'c2', { timestamp: 103 });
  assert.deepEqual(
    driver.output<string, string>('joined').readRecords().map((r) => [r.value, r.timestamp]),
    [
      ['v1+c1', 105],
      ['v2+c1', 108],
      ['v1+c2', 103],
      ['v2+c2', 108],
    ],
  );
});
