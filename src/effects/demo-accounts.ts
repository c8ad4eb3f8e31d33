import type { Pool } from 'pg';
import { Inbox, inTransaction, naive, type EffectResult } from './postgres-sink.ts';
import { quoteIdent } from './sql.ts';

/**
 * A small accounts database for measuring what a replay does to each pattern. Events are debits;
 * accounts start at 0, so an account's correct balance is minus the sum of its debits.
 */

export interface DebitEvent {
  /** The idempotency key: stable across replays of this event. */
  readonly eventId: string;
  readonly account: string;
  readonly amount: number;
  /** 1, 2, 3… per account, in the order the account's events are produced (one partition per account). */
  readonly seq: number;
}

export interface DemoAccounts {
  readonly pool: Pool;
  readonly schema: string;
  readonly inbox: Inbox;
}

/**
 * `accounts(id, balance, version)`, `ledger(event_id primary key, account, amount)` and an inbox, in
 * `schema`, plus `balance_changes`, filled by a trigger on every change of a balance: it counts the
 * effects that really landed, whichever pattern applied them.
 */
export async function createDemoAccounts(pool: Pool, schema: string, accountIds: readonly string[]): Promise<DemoAccounts> {
  const s = quoteIdent(schema);
  await pool.query(`CREATE SCHEMA IF NOT EXISTS ${s}`);
  await pool.query(`CREATE TABLE ${s}.accounts (id text PRIMARY KEY, balance bigint NOT NULL DEFAULT 0, version bigint NOT NULL DEFAULT 0)`);
  await pool.query(`CREATE TABLE ${s}.ledger (event_id text PRIMARY KEY, account text NOT NULL REFERENCES ${s}.accounts (id), amount bigint NOT NULL)`);
  await pool.query(`INSERT INTO ${s}.accounts (id) SELECT unnest($1::text[])`, [[...accountIds]]);
  await pool.query(`CREATE TABLE ${s}.balance_changes (account text NOT NULL, delta bigint NOT NULL)`);
  await pool.query(
    `CREATE FUNCTION ${s}.record_balance_change() RETURNS trigger LANGUAGE plpgsql AS $$ BEGIN ` +
      `INSERT INTO ${s}.balance_changes (account, delta) VALUES (NEW.id, NEW.balance - OLD.balance); RETURN NEW; END $$`,
  );
  await pool.query(`CREATE TRIGGER balance_changed AFTER UPDATE ON ${s}.accounts FOR EACH ROW WHEN (OLD.balance IS DISTINCT FROM NEW.balance) EXECUTE FUNCTION ${s}.record_balance_change()`);
  const inbox = new Inbox(pool, { table: `${schema}.inbox` });
  await inbox.create();
  return { pool, schema, inbox };
}

export async function dropDemoAccounts(db: DemoAccounts): Promise<void> {
  await db.pool.query(`DROP SCHEMA IF EXISTS ${quoteIdent(db.schema)} CASCADE`);
}

/** Modifies a total: every replay debits again. The broken baseline. */
export function applyNaive(db: DemoAccounts, e: DebitEvent): Promise<EffectResult> {
  return naive(db.pool, { table: `${db.schema}.accounts` })(e.eventId, { id: e.account, amount: e.amount });
}

/** The same debit, behind the inbox: the event id and the debit commit together or not at all. */
export function applyInbox(db: DemoAccounts, e: DebitEvent): Promise<EffectResult> {
  return db.inbox.apply(e.eventId, { text: `UPDATE ${quoteIdent(db.schema)}.accounts SET balance = balance - $2 WHERE id = $1`, values: [e.account, e.amount] });
}

/**
 * Records the fact (the debit, keyed by event id) instead of changing a total; the balance is
 * recomputed from the facts, so a replayed fact is a primary-key no-op and changes nothing.
 */
export function applyFact(db: DemoAccounts, e: DebitEvent): Promise<EffectResult> {
  const s = quoteIdent(db.schema);
  return inTransaction(db.pool, 'apply fact', async (client) => {
    const ins = await client.query(`INSERT INTO ${s}.ledger (event_id, account, amount) VALUES ($1, $2, $3) ON CONFLICT (event_id) DO NOTHING`, [e.eventId, e.account, e.amount]);
    if ((ins.rowCount ?? 0) === 0) return { applied: false };
    await client.query(`UPDATE ${s}.accounts SET balance = -(SELECT coalesce(sum(amount), 0) FROM ${s}.ledger WHERE account = $1) WHERE id = $1`, [e.account]);
    return { applied: true };
  });
}

/**
 * The debit applies only when the event's per-account sequence is newer than the last applied,
 * so a replay of an already applied prefix is skipped. For deltas this relies on in-order delivery
 * per account (a Kafka partition gives that); an event overtaken by a newer one would be dropped,
 * which is why absolute state, not deltas, is the usual payload of a version-guarded write.
 */
export async function applyVersioned(db: DemoAccounts, e: DebitEvent): Promise<EffectResult> {
  const res = await db.pool.query(`UPDATE ${quoteIdent(db.schema)}.accounts SET balance = balance - $2, version = $3 WHERE id = $1 AND version < $3`, [e.account, e.amount, e.seq]);
  return { applied: (res.rowCount ?? 0) > 0 };
}

export async function balances(db: DemoAccounts): Promise<Map<string, number>> {
  const res = await db.pool.query<{ id: string; balance: string }>(`SELECT id, balance FROM ${quoteIdent(db.schema)}.accounts ORDER BY id`);
  return new Map(res.rows.map((r) => [r.id, Number(r.balance)]));
}

/** How many times a balance changed: the effects that landed, replays included. */
export async function balanceChangeCount(db: DemoAccounts): Promise<number> {
  const res = await db.pool.query<{ n: string }>(`SELECT count(*) AS n FROM ${quoteIdent(db.schema)}.balance_changes`);
  return Number(res.rows[0]?.n ?? 0);
}

/** `n` debits spread over `accounts`, deterministic so a replay is the very same sequence. */
export function demoEvents(n: number, accounts: readonly string[]): DebitEvent[] {
  const seq = new Map<string, number>();
  return Array.from({ length: n }, (_, i) => {
    const account = accounts[(i * 7) % accounts.length] ?? 'a0';
    const s = (seq.get(account) ?? 0) + 1;
    seq.set(account, s);
    return { eventId: `evt-${i}`, account, amount: 1 + ((i * 37) % 50), seq: s };
  });
}

/** The balances applying each event exactly once gives. */
export function expectedBalances(events: readonly DebitEvent[], accounts: readonly string[]): Map<string, number> {
  const out = new Map(accounts.map((a) => [a, 0]));
  for (const e of events) out.set(e.account, (out.get(e.account) ?? 0) - e.amount);
  return out;
}

/** How far each balance is from the expected one (0 everywhere = exactly-once effect). */
export function balanceDrift(actual: ReadonlyMap<string, number>, expected: ReadonlyMap<string, number>): Map<string, number> {
  return new Map([...expected].map(([k, v]) => [k, (actual.get(k) ?? 0) - v]));
}
