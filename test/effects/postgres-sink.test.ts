import assert from 'node:assert/strict';
import { after, test } from 'node:test';
import pg from 'pg';
import { EffectConfigError, EffectPermanentError, EffectRetriableError, classifyPgError } from '../../src/effects/errors.ts';
import { Inbox, naive, upsert, versionGuard } from '../../src/effects/postgres-sink.ts';
import { PermanentError, RetriableError } from '../../src/core/stage-errors.ts';
import { pool, withSchema } from './pg.ts';

const db = pool();
after(() => db.end());

test('upsert: replaying the same record leaves the same row and reports applied: false', async () => {
  await withSchema(db, 'upsert', async (s) => {
    await db.query(`CREATE TABLE ${s}.orders (id text PRIMARY KEY, status text NOT NULL, amount int NOT NULL)`);
    const put = upsert(db, { table: `${s}.orders`, columns: ['status', 'amount'] });
    assert.deepEqual(await put('k1', { id: 'o1', status: 'paid', amount: 10 }), { applied: true });
    assert.deepEqual(await put('k1', { id: 'o1', status: 'paid', amount: 10 }), { applied: false });
    assert.deepEqual(await put('k2', { id: 'o1', status: 'shipped', amount: 10 }), { applied: true });
    // No natural key in the row: the idempotency key stands in for it.
    assert.deepEqual(await put('evt-9', { status: 'new', amount: 1 }), { applied: true });
    assert.deepEqual(await put('evt-9', { status: 'new', amount: 1 }), { applied: false });
    const rows = (await db.query(`SELECT id, status, amount FROM ${s}.orders ORDER BY id`)).rows;
    assert.deepEqual(rows, [
      { id: 'evt-9', status: 'new', amount: 1 },
      { id: 'o1', status: 'shipped', amount: 10 },
    ]);
  });
});

test('inbox: the dedupe row and the effect commit together; a replay is { applied: false } and the effect runs once', async () => {
  await withSchema(db, 'inbox', async (s) => {
    await db.query(`CREATE TABLE ${s}.accounts (id text PRIMARY KEY, balance int NOT NULL)`);
    await db.query(`INSERT INTO ${s}.accounts VALUES ('a', 100)`);
    const inbox = new Inbox(db, { table: `${s}.inbox` });
    await inbox.create();
    const debit = { text: `UPDATE ${s}.accounts SET balance = balance - 30 WHERE id = 'a'`, values: [] };
    assert.deepEqual(await inbox.apply('evt-1', debit), { applied: true });
    assert.deepEqual(await inbox.apply('evt-1', debit), { applied: false });
    const r = await inbox.apply('evt-2', async (c) => (await c.query(`UPDATE ${s}.accounts SET balance = balance - 5 WHERE id = 'a' RETURNING balance`)).rows[0]);
    assert.deepEqual(r, { applied: true, result: { balance: 65 } });
    assert.equal((await db.query(`SELECT balance FROM ${s}.accounts`)).rows[0].balance, 65);
  });
});

test('inbox: an effect that fails rolls back its dedupe row, so the retry applies it', async () => {
  await withSchema(db, 'inboxfail', async (s) => {
    await db.query(`CREATE TABLE ${s}.t (id text PRIMARY KEY, n int NOT NULL CHECK (n >= 0))`);
    const inbox = new Inbox(db, { table: `${s}.inbox` });
    await inbox.create();
    await assert.rejects(inbox.apply('evt-1', { text: `INSERT INTO ${s}.t VALUES ('x', -1)` }), (e: unknown) => {
      assert.ok(e instanceof EffectPermanentError);
      assert.ok(e instanceof PermanentError, 'subclasses the runtime PermanentError so the engine dead-letters it');
      assert.equal(e.code, 'EFFECT_DB_REJECTED');
      assert.equal(e.detail.sqlState, '23514');
      return true;
    });
    assert.equal((await db.query(`SELECT count(*)::int AS n FROM ${s}.inbox`)).rows[0].n, 0);
    assert.deepEqual(await inbox.apply('evt-1', { text: `INSERT INTO ${s}.t VALUES ('x', 1)` }), { applied: true });
  });
});

test('inbox: a unique violation raised by the effect itself is a permanent error, not "already done"', async () => {
  await withSchema(db, 'inboxdup', async (s) => {
    await db.query(`CREATE TABLE ${s}.t (id text PRIMARY KEY)`);
    await db.query(`INSERT INTO ${s}.t VALUES ('x')`);
    const inbox = new Inbox(db, { table: `${s}.inbox` });
    await inbox.create();
    await assert.rejects(inbox.apply('evt-1', { text: `INSERT INTO ${s}.t VALUES ('x')` }), (e: unknown) => e instanceof EffectPermanentError && e.detail.sqlState === '23505');
  });
});

test('inbox: two concurrent runs with one key apply the effect once', async () => {
  await withSchema(db, 'inboxrace', async (s) => {
    await db.query(`CREATE TABLE ${s}.c (id int PRIMARY KEY, n int NOT NULL)`);
    await db.query(`INSERT INTO ${s}.c VALUES (1, 0)`);
    const inbox = new Inbox(db, { table: `${s}.inbox` });
    await inbox.create();
    const results = await Promise.all(Array.from({ length: 5 }, () => inbox.apply('same', { text: `UPDATE ${s}.c SET n = n + 1` })));
    assert.equal(results.filter((r) => r.applied).length, 1);
    assert.equal((await db.query(`SELECT n FROM ${s}.c`)).rows[0].n, 1);
  });
});

test('inbox: expireInbox deletes only ids seen longer ago than the retention', async () => {
  await withSchema(db, 'inboxexp', async (s) => {
    const inbox = new Inbox(db, { table: `${s}.inbox` });
    await inbox.create();
    for (const id of ['old-1', 'old-2', 'new-1']) await inbox.apply(id, { text: 'SELECT 1' });
    await db.query(`UPDATE ${s}.inbox SET seen_at = now() - interval '8 days' WHERE id LIKE 'old-%'`);
    assert.equal(await inbox.expireInbox(7 * 24 * 3600 * 1000), 2);
    assert.deepEqual((await db.query(`SELECT id FROM ${s}.inbox`)).rows, [{ id: 'new-1' }]);
    await assert.rejects(inbox.expireInbox(-1), EffectConfigError);
  });
});

test('versionGuard: an older redelivery never overwrites newer state; absent rows are inserted', async () => {
  await withSchema(db, 'version', async (s) => {
    await db.query(`CREATE TABLE ${s}.orders (id text PRIMARY KEY, version bigint NOT NULL, status text NOT NULL)`);
    const write = versionGuard(db, { table: `${s}.orders`, columns: ['status'] });
    assert.deepEqual(await write('e1', { id: 'o1', version: 1, values: { status: 'created' } }), { applied: true });
    assert.deepEqual(await write('e3', { id: 'o1', version: 3, values: { status: 'shipped' } }), { applied: true });
    // Out of order, then a plain redelivery: both are older than what is stored.
    assert.deepEqual(await write('e2', { id: 'o1', version: 2, values: { status: 'paid' } }), { applied: false });
    assert.deepEqual(await write('e3', { id: 'o1', version: 3, values: { status: 'shipped' } }), { applied: false });
    assert.deepEqual((await db.query(`SELECT version::int, status FROM ${s}.orders`)).rows, [{ version: 3, status: 'shipped' }]);
  });
});

test('naive (demo only): the same debit replayed with the same key is applied twice', async () => {
  await withSchema(db, 'naive', async (s) => {
    await db.query(`CREATE TABLE ${s}.accounts (id text PRIMARY KEY, balance int NOT NULL)`);
    await db.query(`INSERT INTO ${s}.accounts VALUES ('a', 100)`);
    const debit = naive(db, { table: `${s}.accounts` });
    await debit('evt-1', { id: 'a', amount: 30 });
    await debit('evt-1', { id: 'a', amount: 30 });
    assert.equal((await db.query(`SELECT balance FROM ${s}.accounts`)).rows[0].balance, 40);
  });
});

test('transient database failures are EffectRetriableError (a RetriableError): connection refused', async () => {
  const dead = new pg.Pool({ connectionString: 'postgres://postgres@127.0.0.1:1/test', max: 1 });
  try {
    await assert.rejects(upsert(dead, { table: 't', columns: ['v'] })('k', { id: 'x', v: 1 }), (e: unknown) => {
      assert.ok(e instanceof EffectRetriableError);
      assert.ok(e instanceof RetriableError);
      assert.equal(e.code, 'EFFECT_DB_TRANSIENT');
      assert.equal(e.detail.networkCode, 'ECONNREFUSED');
      return true;
    });
  } finally {
    await dead.end();
  }
});

test('transient database failures: serialization failure 40001, deadlock 40P01 and a killed backend are retriable', async () => {
  await withSchema(db, 'transient', async (s) => {
    const inbox = new Inbox(db, { table: `${s}.inbox` });
    await inbox.create();
    const raise = (state: string) => ({ text: `DO $$ BEGIN RAISE EXCEPTION 'injected' USING ERRCODE = '${state}'; END $$` });
    for (const state of ['40001', '40P01']) {
      await assert.rejects(inbox.apply(`k-${state}`, raise(state)), (e: unknown) => e instanceof EffectRetriableError && e.detail.sqlState === state);
    }
    // A real deadlock: two transactions lock two rows in opposite orders.
    await db.query(`CREATE TABLE ${s}.r (id int PRIMARY KEY)`);
    await db.query(`INSERT INTO ${s}.r VALUES (1), (2)`);
    const a = await db.connect();
    const b = await db.connect();
    try {
      await a.query('BEGIN');
      await b.query('BEGIN');
      await a.query(`SELECT * FROM ${s}.r WHERE id = 1 FOR UPDATE`);
      await b.query(`SELECT * FROM ${s}.r WHERE id = 2 FOR UPDATE`);
      const outcomes = await Promise.allSettled([a.query(`SELECT * FROM ${s}.r WHERE id = 2 FOR UPDATE`), b.query(`SELECT * FROM ${s}.r WHERE id = 1 FOR UPDATE`)]);
      const failed = outcomes.flatMap((o) => (o.status === 'rejected' ? [o.reason] : []));
      assert.equal(failed.length, 1);
      const classified = classifyPgError(failed[0], 'deadlock');
      assert.ok(classified instanceof EffectRetriableError);
      assert.equal(classified.detail.sqlState, '40P01');
    } finally {
      await a.query('ROLLBACK');
      await b.query('ROLLBACK');
      a.release();
      b.release();
    }
    // The server ends the session under us (a restart, a failover): 57P01, then the connection is gone.
    const victim = new pg.Client({ connectionString: (db.options as { connectionString: string }).connectionString });
    victim.on('error', () => undefined);
    await victim.connect();
    const pid = (await victim.query<{ pid: number }>('SELECT pg_backend_pid() AS pid')).rows[0]?.pid;
    // Settled into a value at once: the rejection may arrive before the terminate call returns.
    const pending = victim.query('SELECT pg_sleep(30)').then(() => undefined, (e: unknown) => e);
    await db.query('SELECT pg_terminate_backend($1)', [pid]);
    const err = await pending;
    assert.ok(classifyPgError(err, 'killed') instanceof EffectRetriableError, `classified ${String(err)}`);
    await victim.end().catch(() => undefined);
  });
});

test('data errors are permanent; unsafe identifiers are refused before any SQL runs', async () => {
  await withSchema(db, 'perm', async (s) => {
    await db.query(`CREATE TABLE ${s}.t (id text PRIMARY KEY, n int NOT NULL)`);
    await assert.rejects(upsert(db, { table: `${s}.t`, columns: ['n'] })('k', { id: 'x', n: 'not a number' }), (e: unknown) => e instanceof EffectPermanentError && e.detail.sqlState === '22P02');
    await assert.rejects(upsert(db, { table: `${s}.missing`, columns: ['n'] })('k', { id: 'x', n: 1 }), (e: unknown) => e instanceof EffectPermanentError && e.detail.sqlState === '42P01');
  });
  assert.throws(() => upsert(db, { table: 't; DROP TABLE x', columns: ['n'] }), EffectConfigError);
  assert.throws(() => new Inbox(db, { table: 'a.b.c' }), EffectConfigError);
});
