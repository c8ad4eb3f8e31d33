import { test } from 'node:test';
import assert from 'node:assert/strict';
import { TopologyBuilder } from '../../src/dsl/topology-builder.ts';
import { jsonSerde, stringSerde } from '../../src/serdes/index.ts';
import { TopologyTestDriver, type TestDriverOptions } from '../../src/testing/test-driver.ts';
import { compile } from '../../src/graph/index.ts';
import { InvalidStageOptionError } from '../../src/graph/errors.ts';
import { describeText } from '../../src/cli/describe.ts';

function pricing(opts: { graceMs?: number; left?: boolean; versioned?: boolean; retentionMs?: number } = {}) {
  const app = new TopologyBuilder({ appId: 'grace' });
  const rates = app.table('rates', { key: stringSerde, value: jsonSerde<number>(), ...(opts.versioned === false ? {} : { versioned: { historyRetentionMs: opts.retentionMs ?? 1_000 } }) });
  const payments = app.stream('payments', { key: stringSerde, value: jsonSerde<string>() });
  const joiner = (_k: unknown, id: string, rate: number | null) => `${id}@${rate ?? 'none'}`;
  const joinOpts = { name: 'price', value: stringSerde, ...(opts.graceMs !== undefined ? { graceMs: opts.graceMs } : {}) };
  (opts.left ? payments.leftJoin(rates, joiner, joinOpts) : payments.join(rates, joiner, joinOpts)).to('priced');
  return app;
}

function drive(app: TopologyBuilder, opts: TestDriverOptions = {}) {
  const driver = new TopologyTestDriver(app, opts);
  return { driver, rates: driver.input<string, number>('rates'), payments: driver.input<string, string>('payments'), priced: driver.output<string, string>('priced') };
}

test('with a grace period a stream record waits, so a table update that arrives after it but is older still prices it (KIP-923)', () => {
  const { driver, rates, payments, priced } = drive(pricing({ graceMs: 10 }));
  rates.pipe('eur', 100, { timestamp: 0 });
  payments.pipe('eur', 'p5', { timestamp: 5 });
  assert.deepEqual(priced.readValues(), [], 'p5 waits until stream time reaches 15');
  rates.pipe('eur', 105, { timestamp: 3 });
  payments.pipe('eur', 'p20', { timestamp: 20 });
  assert.deepEqual(priced.readRecords().map((r) => [r.value, r.timestamp]), [['p5@105', 5]], 'released with its own timestamp, joined with the rate of 3 that came after it');
  driver.advanceStreamTime(10);
  assert.deepEqual(priced.readValues(), ['p20@105']);
  assert.deepEqual(driver.store('price-buffer').entries(), [], 'the buffer is empty once everything joined');
});

test('without a grace period the same input joins the rate known on arrival', () => {
  const { rates, payments, priced } = drive(pricing());
  rates.pipe('eur', 100, { timestamp: 0 });
  payments.pipe('eur', 'p5', { timestamp: 5 });
  rates.pipe('eur', 105, { timestamp: 3 });
  assert.deepEqual(priced.readValues(), ['p5@100']);
});

test('waiting records join in timestamp order, whatever their arrival order; a record already past the grace joins at once', () => {
  const { driver, rates, payments, priced } = drive(pricing({ graceMs: 10 }));
  rates.pipe('eur', 100, { timestamp: 0 });
  rates.pipe('usd', 90, { timestamp: 0 });
  payments.pipe('eur', 'p9', { timestamp: 9 });
  payments.pipe('usd', 'u7', { timestamp: 7 });
  payments.pipe('eur', 'p7', { timestamp: 7 });
  payments.pipe('eur', 'p30', { timestamp: 30 });
  assert.deepEqual(priced.readValues(), ['u7@90', 'p7@100', 'p9@100']);
  payments.pipe('eur', 'late', { timestamp: 12 });
  assert.deepEqual(priced.readValues(), ['late@100'], '12 + 10 is behind stream time 30: no waiting');
  driver.advanceStreamTime(100);
  assert.deepEqual(priced.readValues(), ['p30@100']);
});

test('a left join with a grace period emits a record with null once it is due, if no version is valid at its time', () => {
  const { driver, rates, payments, priced } = drive(pricing({ graceMs: 10, left: true }));
  payments.pipe('eur', 'p1', { timestamp: 1 });
  rates.pipe('eur', 100, { timestamp: 2 });
  driver.advanceStreamTime(20);
  assert.deepEqual(priced.readValues(), ['p1@none']);
});

test('the buffer rolls back with an aborted transaction and comes back whole on redelivery', () => {
  const { driver, rates, payments, priced } = drive(pricing({ graceMs: 10 }), { autoCommit: false });
  rates.pipe('eur', 100, { timestamp: 0 });
  payments.pipe('eur', 'p5', { timestamp: 5 });
  driver.commit();
  rates.pipe('eur', 104, { timestamp: 4 });
  payments.pipe('eur', 'p40', { timestamp: 40 });
  driver.abort({ redeliver: true });
  driver.commit();
  assert.deepEqual(priced.readValues(), ['p5@104'], 'p5, held before the abort, released once by the redelivered records');
  assert.equal(driver.records('grace-price-buffer-changelog').length > 0, true, 'the buffer is changelogged');
});

test('a grace period needs a versioned table, and may not exceed its history retention; describe shows the buffer store', () => {
  assert.throws(() => compile(pricing({ graceMs: 10, versioned: false })), (e: unknown) => e instanceof InvalidStageOptionError && /needs a versioned table/.test(e.message));
  assert.throws(() => compile(pricing({ graceMs: 2_000, retentionMs: 1_000 })), (e: unknown) => e instanceof InvalidStageOptionError && /may not exceed/.test(e.message));
  assert.match(describeText(compile(pricing({ graceMs: 10 }))), /price-buffer \(join-buffer, node price, sub-topology 0, changelog grace-price-buffer-changelog\)/);
});
