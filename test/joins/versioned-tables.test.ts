import { test } from 'node:test';
import assert from 'node:assert/strict';
import { TopologyBuilder } from '../../src/dsl/topology-builder.ts';
import { jsonSerde, stringSerde } from '../../src/serdes/index.ts';
import { TopologyTestDriver } from '../../src/testing/test-driver.ts';
import { InvalidStageOptionError } from '../../src/graph/errors.ts';
import { compile } from '../../src/graph/index.ts';
import { describeJson, describeMermaid, describeText } from '../../src/cli/describe.ts';

const nullableJson = <T>() => jsonSerde<T>({ nullable: true });

/** Payments (stream) priced with the rate valid at their timestamp (versioned table), KIP-889's example. */
function pricing(opts: { versioned?: boolean; left?: boolean; retentionMs?: number } = {}) {
  const app = new TopologyBuilder({ appId: 'pricing' });
  const rates = app.table('rates', { key: stringSerde, value: jsonSerde<number>(), store: 'rates', ...(opts.versioned === false ? {} : { versioned: { historyRetentionMs: opts.retentionMs ?? 1_000 } }) });
  rates.toStream().to('rate-updates', { value: nullableJson<number>() });
  const payments = app.stream('payments', { key: stringSerde, value: jsonSerde<string>() });
  const joiner = (_k: unknown, id: string, rate: number | null) => `${id}@${rate ?? 'none'}`;
  (opts.left ? payments.leftJoin(rates, joiner, { value: stringSerde }) : payments.join(rates, joiner, { value: stringSerde })).to('priced');
  const driver = new TopologyTestDriver(app);
  return { driver, rates: driver.input<string, number>('rates'), payments: driver.input<string, string>('payments'), priced: driver.output<string, string>('priced') };
}

test("a stream record joins the table version valid at its own timestamp: an out-of-order stream record meets the older version (KIP-889's example)", () => {
  const { driver, rates, payments, priced } = pricing();
  rates.pipe('eur', 100, { timestamp: 0 });
  payments.pipe('eur', 'a1', { timestamp: 1 });
  rates.pipe('eur', 103, { timestamp: 3 });
  payments.pipe('eur', 'a4', { timestamp: 4 });
  payments.pipe('eur', 'a2', { timestamp: 2 });
  assert.deepEqual(priced.readValues(), ['a1@100', 'a4@103', 'a2@100']);
  assert.equal(driver.store<string, number>('rates').get('eur'), 103, 'the store answers the latest version');
  assert.equal(driver.query<string, number>('rates').getAsOf('eur', 2), 100, 'and any version within the retention');
});

test('a non-versioned table keeps joining the latest row, whatever the stream record timestamp', () => {
  const { rates, payments, priced } = pricing({ versioned: false });
  rates.pipe('eur', 100, { timestamp: 0 });
  rates.pipe('eur', 103, { timestamp: 3 });
  payments.pipe('eur', 'a2', { timestamp: 2 });
  assert.deepEqual(priced.readValues(), ['a2@103']);
});

test('an out-of-order table update goes into the history: later stream records at its time meet it, the table (and toStream) does not change', () => {
  const { driver, rates, payments, priced } = pricing();
  rates.pipe('eur', 100, { timestamp: 0 });
  rates.pipe('eur', 105, { timestamp: 5 });
  rates.pipe('eur', 102, { timestamp: 2 });
  payments.pipe('eur', 'a3', { timestamp: 3 });
  payments.pipe('eur', 'a1', { timestamp: 1 });
  payments.pipe('eur', 'a6', { timestamp: 6 });
  assert.deepEqual(priced.readValues(), ['a3@102', 'a1@100', 'a6@105']);
  assert.deepEqual(driver.output<string, number | null>('rate-updates').readValues(), [100, 105], 'the out-of-order update is not a change of the table');
  assert.equal(driver.store<string, number>('rates').get('eur'), 105);
});

test('a late stream record, behind the history retention, finds no version: an inner join drops it, a left join emits it with null', () => {
  for (const left of [false, true]) {
    const { driver, rates, payments, priced } = pricing({ retentionMs: 10, left });
    rates.pipe('eur', 100, { timestamp: 0 });
    rates.pipe('eur', 120, { timestamp: 20 });
    rates.pipe('eur', 150, { timestamp: 50 });
    payments.pipe('eur', 'a30', { timestamp: 30 });
    payments.pipe('eur', 'a45', { timestamp: 45 });
    assert.deepEqual(priced.readValues(), left ? ['a30@none', 'a45@120'] : ['a45@120'], left ? 'left join' : 'inner join');
    assert.equal(driver.query<string, number>('rates').getAsOf('eur', 10), undefined, 'the version valid from 0 to 20 ended before stream time - retention (40): dropped');
    assert.equal(driver.query<string, number>('rates').getAsOf('eur', 45), 120, 'the one valid at the horizon stays');
  }
});

test('a table update behind the retention is dropped and counted as late; a deletion is a version: the key has no row from then on', () => {
  const { driver, rates, payments, priced } = pricing({ retentionMs: 10 });
  rates.pipe('eur', 100, { timestamp: 0 });
  rates.pipe('eur', 120, { timestamp: 20 });
  rates.pipe('eur', 99, { timestamp: 5 });
  assert.equal(driver.metrics().lateRecordsDropped, 1);
  rates.pipe('eur', null, { timestamp: 25 });
  payments.pipe('eur', 'a24', { timestamp: 24 });
  payments.pipe('eur', 'a26', { timestamp: 26 });
  assert.deepEqual(priced.readValues(), ['a24@120'], 'a26 comes after the deletion');
  assert.equal(driver.store<string, number>('rates').get('eur'), undefined);
  assert.deepEqual(driver.store('rates').entries(), [], 'a deleted key is no entry, though its history stays');
  assert.equal(driver.query<string, number>('rates').getAsOf('eur', 22), 120);
});

test('an aborted transaction leaves the history as the last commit did; its replay joins as the first run would have', () => {
  const driver = new TopologyTestDriver(ratesAndPayments(), { autoCommit: false });
  const rates = driver.input<string, number>('rates');
  const payments = driver.input<string, string>('payments');
  rates.pipe('eur', 100, { timestamp: 0 });
  driver.commit();
  rates.pipe('eur', 102, { timestamp: 2 });
  rates.pipe('eur', 101, { timestamp: 1 });
  payments.pipe('eur', 'a1', { timestamp: 1 });
  driver.abort();
  assert.equal(driver.query<string, number>('rates').getAsOf('eur', 1), 100, 'the aborted versions are gone');
  payments.pipe('eur', 'a1', { timestamp: 1 });
  driver.commit();
  assert.deepEqual(driver.output<string, string>('priced').readValues(), ['a1@100']);
  assert.equal(driver.records('pricing-rates-changelog').length, 1, 'a versioned table has a changelog of its own, which got the committed history only');
});

function ratesAndPayments(): TopologyBuilder {
  const app = new TopologyBuilder({ appId: 'pricing' });
  const rates = app.table('rates', { key: stringSerde, value: jsonSerde<number>(), store: 'rates', versioned: { historyRetentionMs: 1_000 } });
  app
    .stream('payments', { key: stringSerde, value: jsonSerde<string>() })
    .join(rates, (_k, id, rate) => `${id}@${rate}`, { value: stringSerde })
    .to('priced');
  return app;
}

test('filter and mapValues after a versioned table keep the timestamped lookup', () => {
  const app = new TopologyBuilder({ appId: 'pricing' });
  const rates = app
    .table('rates', { key: stringSerde, value: jsonSerde<number>(), versioned: { historyRetentionMs: 1_000 } })
    .filter((_k, rate) => rate > 0)
    .mapValues((rate) => rate / 100, { value: jsonSerde<number>() });
  app
    .stream('payments', { key: stringSerde, value: jsonSerde<string>() })
    .join(rates, (_k, id, rate) => `${id}@${rate}`, { value: stringSerde })
    .to('priced');
  const driver = new TopologyTestDriver(app);
  driver.input<string, number>('rates').pipe('eur', 100, { timestamp: 0 });
  driver.input<string, number>('rates').pipe('eur', -1, { timestamp: 5 });
  driver.input<string, number>('rates').pipe('eur', 300, { timestamp: 10 });
  const payments = driver.input<string, string>('payments');
  payments.pipe('eur', 'a12', { timestamp: 12 });
  payments.pipe('eur', 'a6', { timestamp: 6 });
  payments.pipe('eur', 'a3', { timestamp: 3 });
  assert.deepEqual(driver.output<string, string>('priced').readValues(), ['a12@3', 'a3@1'], 'a6 meets the filtered-out version');
});

test('a versioned table needs a positive whole historyRetentionMs, and never uses its source topic as changelog', () => {
  const app = new TopologyBuilder({ appId: 'v' });
  app.table('rates', { key: stringSerde, value: jsonSerde<number>(), versioned: { historyRetentionMs: 0 } }).toStream().to('out');
  assert.throws(() => compile(app), (e: unknown) => e instanceof InvalidStageOptionError && /historyRetentionMs/.test(e.message));
  const ok = compile(ratesAndPayments());
  const store = ok.stores.get('rates')!;
  assert.equal(store.kind, 'versioned');
  assert.deepEqual(store.versioned, { historyRetentionMs: 1_000 });
  assert.equal(store.changelogTopic, 'pricing-rates-changelog');
  assert.ok(!store.sourceTopicChangelog);
});

test('describe shows a versioned store with its history retention, in text, JSON and Mermaid', () => {
  const compiled = compile(ratesAndPayments());
  assert.match(describeText(compiled), /rates \(versioned, node KTABLE-TOTABLE-\d+, sub-topology 0, changelog pricing-rates-changelog, history retention 1000ms\)/);
  const store = describeJson(compiled).stores.find((s) => s.name === 'rates')!;
  assert.deepEqual([store.kind, store.versioned], ['versioned', { historyRetentionMs: 1_000 }]);
  assert.match(describeMermaid(compiled), /stores: rates \(versioned\)/);
  assert.ok(compiled.topics.some((t) => t.name === 'pricing-rates-changelog' && t.kind === 'changelog' && t.cleanupPolicy === 'compact'));
});
