import assert from 'node:assert/strict';
import { after, test } from 'node:test';
import { applyFact, applyInbox, applyNaive, applyVersioned, balanceDrift, balances, createDemoAccounts, demoEvents, dropDemoAccounts, expectedBalances, type DebitEvent, type DemoAccounts } from '../../src/effects/demo-accounts.ts';
import type { EffectResult } from '../../src/effects/postgres-sink.ts';
import { pool, uniqueSchema } from './pg.ts';

const db = pool();
after(() => db.end());

const ACCOUNTS = ['acc-0', 'acc-1', 'acc-2', 'acc-3', 'acc-4'];
const EVENTS = demoEvents(100, ACCOUNTS);
const EXPECTED = expectedBalances(EVENTS, ACCOUNTS);
const DEBITED = EVENTS.reduce((s, e) => s + e.amount, 0);

type Apply = (db: DemoAccounts, e: DebitEvent) => Promise<EffectResult>;

/**
 * The crash-replay: the worker applied all 100 effects, then died before its Kafka transaction
 * committed the offsets, so the next owner of the partitions replays the same 100 records with the
 * same idempotency keys.
 */
async function runWithReplay(apply: Apply, between?: (d: DemoAccounts) => Promise<void>) {
  const d = await createDemoAccounts(db, uniqueSchema('demo'), ACCOUNTS);
  try {
    let first = 0;
    for (const e of EVENTS) if ((await apply(d, e)).applied) first++;
    await between?.(d);
    let replayed = 0;
    for (const e of EVENTS) if ((await apply(d, e)).applied) replayed++;
    const actual = await balances(d);
    const drift = balanceDrift(actual, EXPECTED);
    const totalDrift = [...drift.values()].reduce((s, v) => s + v, 0);
    return { first, replayed, actual, drift, totalDrift };
  } finally {
    await dropDemoAccounts(d);
  }
}

test('naive: the replay debits every event a second time; balances are off by the whole replay', async () => {
  const r = await runWithReplay(applyNaive);
  console.log(`naive: first pass applied ${r.first}, replay applied ${r.replayed} again; total drift ${r.totalDrift} (debited ${DEBITED} once)`);
  assert.equal(r.first, 100);
  assert.equal(r.replayed, 100, 'every replayed event double-applied');
  assert.notDeepEqual(r.actual, EXPECTED);
  assert.equal(r.totalDrift, -DEBITED, 'the replay debited everything once more');
  for (const a of ACCOUNTS) assert.equal(r.actual.get(a), 2 * (EXPECTED.get(a) ?? 0));
});

for (const [name, apply] of [['inbox', applyInbox], ['fact', applyFact], ['versioned', applyVersioned]] as const) {
  test(`${name}: the replay applies nothing; balances equal the exactly-once result`, async () => {
    const r = await runWithReplay(apply);
    console.log(`${name}: first pass applied ${r.first}, replay applied ${r.replayed}; total drift ${r.totalDrift}`);
    assert.equal(r.first, 100);
    assert.equal(r.replayed, 0);
    assert.deepEqual(r.actual, EXPECTED);
    assert.equal(r.totalDrift, 0);
  });
}

test('inbox with a retention shorter than the replay window re-admits the replayed events: double effect', async () => {
  // The first pass happened 8 days ago; the dedupe table keeps 7 days; then history is replayed.
  const r = await runWithReplay(applyInbox, async (d) => {
    await db.query(`UPDATE "${d.schema}".inbox SET seen_at = seen_at - interval '8 days'`);
    assert.equal(await d.inbox.expireInbox(7 * 24 * 3600 * 1000), 100);
  });
  console.log(`inbox, 7-day retention, 8-day-old replay: replay applied ${r.replayed} again; total drift ${r.totalDrift}`);
  assert.equal(r.replayed, 100);
  assert.equal(r.totalDrift, -DEBITED);
});

test('inbox with a retention longer than the replay window still dedupes after expiry ran', async () => {
  const r = await runWithReplay(applyInbox, async (d) => {
    await db.query(`UPDATE "${d.schema}".inbox SET seen_at = seen_at - interval '8 days'`);
    assert.equal(await d.inbox.expireInbox(30 * 24 * 3600 * 1000), 0);
  });
  assert.equal(r.replayed, 0);
  assert.equal(r.totalDrift, 0);
});

test('versioned deltas rely on per-account order: an older event arriving after a newer one is skipped', async () => {
  const d = await createDemoAccounts(db, uniqueSchema('demo'), ['acc-0']);
  try {
    const [e1, e2] = [
      { eventId: 'x1', account: 'acc-0', amount: 10, seq: 1 },
      { eventId: 'x2', account: 'acc-0', amount: 20, seq: 2 },
    ];
    assert.equal((await applyVersioned(d, e2)).applied, true);
    assert.equal((await applyVersioned(d, e1)).applied, false);
    assert.equal((await balances(d)).get('acc-0'), -20, 'the overtaken debit is lost: version guards suit absolute state, not deltas out of order');
  } finally {
    await dropDemoAccounts(d);
  }
});
