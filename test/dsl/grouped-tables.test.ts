import { test } from 'node:test';
import assert from 'node:assert/strict';
import { TopologyBuilder } from '../../src/dsl/topology-builder.ts';
import { compile } from '../../src/graph/index.ts';
import { jsonSerde, stringSerde } from '../../src/serdes/index.ts';
import { TopologyTestDriver } from '../../src/testing/test-driver.ts';
import { customerSegmentsTopology, type SegmentCustomer } from '../../topology/customer-segments.ts';

const customer = (segment: string, balance: number): SegmentCustomer => ({ segment, balance });

function segments(opts: ConstructorParameters<typeof TopologyTestDriver>[1] = {}) {
  const driver = new TopologyTestDriver(customerSegmentsTopology(), opts);
  return {
    driver,
    customers: driver.input<string, SegmentCustomer>('customers'),
    counts: driver.output<string, number | null>('segment-counts'),
    balances: driver.output<string, number | null>('segment-balances'),
  };
}

test('a customer who changes segment leaves the old segment (count and sum) and joins the new one', () => {
  const { driver, customers, counts, balances } = segments();
  customers.pipe('c1', customer('gold', 10));
  customers.pipe('c2', customer('gold', 5));
  customers.pipe('c1', customer('basic', 7));
  assert.deepEqual(counts.readKeyValues(), [['gold', 1], ['gold', 2], ['gold', 1], ['basic', 1]]);
  assert.deepEqual(balances.readKeyValues(), [['gold', 10], ['gold', 15], ['gold', 5], ['basic', 7]]);
  assert.deepEqual(driver.store<string, number>('segment-counts').entries().sort(), [['basic', 1], ['gold', 1]]);
  assert.deepEqual(driver.store<string, SegmentCustomer>('by-segment').get('c1'), customer('basic', 7), 'the re-grouping keeps the rows it placed');
});

test('an update that keeps its segment changes the aggregate once: the removed and the added value travel in one record', () => {
  const { driver, customers, counts, balances } = segments();
  customers.pipe('c1', customer('gold', 10));
  customers.pipe('c1', customer('gold', 12));
  assert.deepEqual(counts.readKeyValues(), [['gold', 1], ['gold', 1]]);
  assert.deepEqual(balances.readKeyValues(), [['gold', 10], ['gold', 12]]);
  const flags = driver.records('customer-segments-segment-balances-repartition').map((r) => r.value![0]);
  assert.deepEqual(flags, [2, 3], 'added, then removed+added');
});

test('a deleted customer leaves its segment; a segment whose last customer left counts 0 and sums 0 (kept, not a tombstone, as Kafka Streams)', () => {
  const { driver, customers, counts, balances } = segments();
  customers.pipe('c1', customer('gold', 10));
  customers.pipe('c2', customer('gold', 5));
  customers.pipe('c2', null);
  customers.pipe('c1', null);
  customers.pipe('c3', null);
  assert.deepEqual(counts.readKeyValues(), [['gold', 1], ['gold', 2], ['gold', 1], ['gold', 0]]);
  assert.deepEqual(balances.readKeyValues(), [['gold', 10], ['gold', 15], ['gold', 10], ['gold', 0]]);
  assert.equal(driver.store<string, number>('segment-counts').get('gold'), 0);
  assert.deepEqual(driver.store('by-segment').entries(), [], 'deleted rows leave the re-grouping store');
  assert.equal(driver.records('customer-segments-segment-counts-repartition').length, 4, 'a tombstone for an unknown customer sends nothing');
});

test('a subtractor that returns null deletes the group: a tombstone downstream and no row in the store', () => {
  const app = new TopologyBuilder({ appId: 'members' });
  app
    .table('customers', { key: stringSerde, value: jsonSerde<SegmentCustomer>() })
    .groupBy((id, c) => [c.segment, String(id)], { key: stringSerde, value: stringSerde })
    .aggregate(
      () => [] as string[],
      (_segment, id, ids) => [...ids, id].sort(),
      (_segment, id, ids) => (ids.length === 1 ? null : ids.filter((x) => x !== id)),
      { state: jsonSerde<string[]>(), name: 'members' },
    )
    .toStream()
    .to('members', { value: jsonSerde<string[] | null>({ nullable: true }) });
  const driver = new TopologyTestDriver(app);
  const input = driver.input<string, SegmentCustomer>('customers');
  input.pipe('c1', customer('gold', 1));
  input.pipe('c2', customer('gold', 1));
  input.pipe('c1', customer('basic', 1));
  input.pipe('c2', null);
  input.pipe('c2', customer('gold', 1));
  assert.deepEqual(driver.output<string, string[] | null>('members').readKeyValues(), [
    ['gold', ['c1']],
    ['gold', ['c1', 'c2']],
    ['gold', ['c2']],
    ['basic', ['c1']],
    ['gold', null],
    ['gold', ['c2']],
  ]);
  driver.input<string, SegmentCustomer>('customers').pipe('c2', null);
  assert.equal(driver.store('members').get('gold'), undefined);
  assert.deepEqual(driver.store('members').entries(), [['basic', ['c1']]]);
});

test('reduce with an adder and a subtractor: a group starts from its first value', () => {
  const app = new TopologyBuilder({ appId: 'reduce' });
  app
    .table('customers', { key: stringSerde, value: jsonSerde<SegmentCustomer>() })
    .groupBy((_id, c) => [c.segment, c.balance], { key: stringSerde, value: jsonSerde<number>() })
    .reduce(
      (sum, balance) => sum + balance,
      (sum, balance) => sum - balance,
      { name: 'sums' },
    )
    .toStream()
    .to('sums', { value: jsonSerde<number>() });
  const driver = new TopologyTestDriver(app);
  const input = driver.input<string, SegmentCustomer>('customers');
  input.pipe('c1', customer('gold', 10));
  input.pipe('c2', customer('gold', 3));
  input.pipe('c1', customer('basic', 4));
  input.pipe('c2', null);
  assert.deepEqual(driver.output<string, number>('sums').readKeyValues(), [['gold', 10], ['gold', 13], ['gold', 3], ['basic', 4], ['gold', 0]]);
});

test('tables have no grace: an out-of-order update is applied in arrival order, and so is a record far behind stream time', () => {
  const { driver, customers, counts } = segments();
  customers.pipe('c1', customer('gold', 1), { timestamp: 100_000 });
  // Older than stream time: still the latest row of c1 (arrival order, as a non-versioned table in Kafka Streams).
  customers.pipe('c1', customer('basic', 1), { timestamp: 50_000 });
  customers.pipe('c2', customer('silver', 1), { timestamp: 200_000 });
  // A day behind stream time: tables drop nothing as late.
  customers.pipe('c1', customer('silver', 1), { timestamp: 200_000 - 86_400_000 });
  assert.deepEqual(
    counts.readRecords().map((r) => [r.key, r.value, r.timestamp]),
    [
      ['gold', 1, 100_000],
      ['gold', 0, 50_000],
      ['basic', 1, 50_000],
      ['silver', 1, 200_000],
      ['basic', 0, 200_000 - 86_400_000],
      ['silver', 2, 200_000 - 86_400_000],
    ],
  );
  assert.equal(driver.metrics().lateRecordsDropped, 0);
});

test('with 3 partitions and a record cache, the per-segment counts match a model of the table', () => {
  const { driver, customers, counts } = segments({ partitions: 3, cacheMaxRecords: 100, autoCommit: false });
  const model = new Map<string, string>();
  const names = ['gold', 'silver', 'basic'];
  let seed = 7;
  const rand = (n: number): number => (seed = (seed * 1103515245 + 12345) % 2 ** 31) % n;
  for (let i = 0; i < 500; i++) {
    const id = `c${rand(40)}`;
    if (rand(5) === 0) {
      customers.pipe(id, null);
      model.delete(id);
    } else {
      const segment = names[rand(3)]!;
      customers.pipe(id, customer(segment, 1));
      model.set(id, segment);
    }
    if (i % 37 === 0) driver.commit();
  }
  driver.commit();
  const last = new Map<string, number | null>();
  for (const [segment, n] of counts.readKeyValues()) last.set(segment, n);
  const want = new Map(names.map((s) => [s, [...model.values()].filter((x) => x === s).length]));
  assert.deepEqual(Object.fromEntries([...last].sort()), Object.fromEntries([...want].sort()));
});

test('an aborted transaction rolls back the re-grouping store with the aggregates, so the redelivered update moves the row once', () => {
  const { driver, customers, counts } = segments({ autoCommit: false });
  customers.pipe('c1', customer('gold', 1));
  driver.commit();
  customers.pipe('c1', customer('basic', 1));
  driver.abort({ redeliver: true });
  driver.commit();
  assert.deepEqual(counts.readKeyValues(), [['gold', 1], ['gold', 0], ['basic', 1]]);
  assert.deepEqual(driver.store<string, number>('segment-counts').entries().sort(), [['basic', 1], ['gold', 0]]);
});

test('compile refuses an async adder, and a table whose value serde was lost before groupBy', () => {
  const app = new TopologyBuilder({ appId: 'bad' });
  app
    .table('customers', { key: stringSerde, value: jsonSerde<SegmentCustomer>() })
    .groupBy((_id, c) => [c.segment, c.balance], { key: stringSerde, value: jsonSerde<number>() })
    .aggregate(() => 0, (async (_k: string, v: number, s: number) => s + v) as never, (_k, v, s) => s - v, { state: jsonSerde<number>() });
  assert.throws(() => compile(app), (e: { code?: string }) => e.code === 'ASYNC_STAGE_FUNCTION');
  const lost = new TopologyBuilder({ appId: 'lost' });
  lost
    .table('customers', { key: stringSerde, value: jsonSerde<SegmentCustomer>() })
    .mapValues((c) => c.segment)
    .groupBy((_id, segment) => [segment, 1], { key: stringSerde, value: jsonSerde<number>() })
    .count();
  assert.throws(() => compile(lost), (e: { code?: string; message: string }) => e.code === 'MISSING_SERDE' && /re-grouping/.test(e.message));
});
