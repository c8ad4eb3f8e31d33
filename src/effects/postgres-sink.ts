import type { ClientBase, Pool, PoolClient, QueryResult, QueryResultRow } from 'pg';
import { classifyPgError, EffectConfigError } from './errors.ts';
import { bareName, quoteIdent } from './sql.ts';

/**
 * Idempotent PostgreSQL sinks: one function per pattern, called once per record with the record's
 * idempotency key. A Kafka transaction does not cover the database, so every one of these runs
 * again when the transaction around the stage aborts or the worker dies before commit; each
 * pattern below says what a second run does. See docs/effects.md.
 */

/** What one call did. `applied: false` means the database already reflected this input. */
export interface EffectResult {
  readonly applied: boolean;
}

export type Row = Readonly<Record<string, unknown>>;

/** A parameterised statement, run as given. */
export interface Statement {
  readonly text: string;
  readonly values?: readonly unknown[];
}

async function run<R extends QueryResultRow>(db: Pool | ClientBase, what: string, text: string, values: readonly unknown[]): Promise<QueryResult<R>> {
  try {
    return await db.query<R>(text, [...values]);
  } catch (e) {
    throw classifyPgError(e, what);
  }
}

/** BEGIN … COMMIT on one pooled connection; any failure rolls back and is classified once. */
export async function inTransaction<T>(pool: Pool, what: string, body: (client: PoolClient) => Promise<T>): Promise<T> {
  let client: PoolClient;
  try {
    client = await pool.connect();
  } catch (e) {
    throw classifyPgError(e, what);
  }
  let broken = false;
  try {
    await client.query('BEGIN');
    const out = await body(client);
    await client.query('COMMIT');
    return out;
  } catch (e) {
    try {
      await client.query('ROLLBACK');
    } catch {
      // The connection itself failed; hand it back destroyed so the pool does not reuse it.
      broken = true;
    }
    throw classifyPgError(e, what);
  } finally {
    client.release(broken);
  }
}

// ---------------------------------------------------------------------------------------------
// 1. Natural key + upsert

export interface UpsertSpec {
  readonly table: string;
  /** The natural key column; it must carry a unique constraint. Default `id`. */
  readonly key?: string;
  /** Columns written besides the key. */
  readonly columns: readonly string[];
}

/**
 * `INSERT … ON CONFLICT (key) DO UPDATE`: a replay writes the same row again, so the final state is
 * the same however often it runs. The update is skipped when nothing would change, which is how a
 * replay reports `applied: false`. When the row has no value for the key column the idempotency
 * key is used, for records whose only natural identity is the event.
 */
export function upsert(pool: Pool, spec: UpsertSpec): (idempotencyKey: string, row: Row) => Promise<EffectResult> {
  const key = spec.key ?? 'id';
  if (spec.columns.length === 0) throw new EffectConfigError(`upsert into ${spec.table}: no columns besides the key`);
  if (spec.columns.includes(key)) throw new EffectConfigError(`upsert into ${spec.table}: the key ${key} is listed among the columns`);
  const table = quoteIdent(spec.table);
  const k = quoteIdent(key);
  const cols = spec.columns.map(quoteIdent);
  const text =
    `INSERT INTO ${table} AS t (${k}, ${cols.join(', ')}) VALUES (${[k, ...cols].map((_, i) => `$${i + 1}`).join(', ')}) ` +
    `ON CONFLICT (${k}) DO UPDATE SET ${cols.map((c) => `${c} = EXCLUDED.${c}`).join(', ')} ` +
    `WHERE (${cols.map((c) => `t.${c}`).join(', ')}) IS DISTINCT FROM (${cols.map((c) => `EXCLUDED.${c}`).join(', ')})`;
  return async (idempotencyKey, row) => {
    const values = [row[key] ?? idempotencyKey, ...spec.columns.map((c) => row[c] ?? null)];
    const res = await run(pool, `upsert into ${spec.table}`, text, values);
    return { applied: (res.rowCount ?? 0) > 0 };
  };
}

// ---------------------------------------------------------------------------------------------
// 2. Dedupe (inbox) table in the same transaction as the effect

export interface InboxOptions {
  /** Default `onceflow_inbox`. */
  readonly table?: string;
}

export interface InboxResult<T> extends EffectResult {
  /** What the effect returned; absent when it did not run. */
  readonly result?: T;
}

/**
 * A table of processed idempotency keys, written in the same database transaction as the effect:
 * either both commit or neither does, so a replay finds the key and skips the effect. It only
 * dedupes for as long as a key is kept: `expireInbox` bounds the table, and any replay reaching
 * further back than the retention applies its effects again.
 */
export class Inbox {
  readonly table: string;
  readonly #quoted: string;

  constructor(
    readonly pool: Pool,
    opts: InboxOptions = {},
  ) {
    this.table = opts.table ?? 'onceflow_inbox';
    this.#quoted = quoteIdent(this.table);
  }

  async create(): Promise<void> {
    await run(this.pool, `create inbox ${this.table}`, `CREATE TABLE IF NOT EXISTS ${this.#quoted} (id text PRIMARY KEY, seen_at timestamptz NOT NULL DEFAULT now())`, []);
    await run(this.pool, `create inbox ${this.table}`, `CREATE INDEX IF NOT EXISTS "${bareName(this.table)}_seen_at" ON ${this.#quoted} (seen_at)`, []);
  }

  /**
   * Records the key, then runs the effect, in one transaction. A unique violation on the inbox
   * means an earlier run committed: the effect is not run and `{ applied: false }` comes back.
   * A concurrent run with the same key blocks on the key's index entry until the first one
   * commits (then this one skips) or rolls back (then this one applies).
   */
  apply<T>(idempotencyKey: string, effect: Statement | ((client: PoolClient) => Promise<T>)): Promise<InboxResult<T>> {
    return inTransaction(this.pool, `inbox ${this.table}`, async (client) => {
      await client.query('SAVEPOINT onceflow_inbox');
      try {
        await client.query(`INSERT INTO ${this.#quoted} (id) VALUES ($1)`, [idempotencyKey]);
      } catch (e) {
        // Only a duplicate *in the inbox* means "done"; one raised by the effect is a real error.
        if (isUniqueViolationOn(e, bareName(this.table))) {
          await client.query('ROLLBACK TO SAVEPOINT onceflow_inbox');
          return { applied: false };
        }
        throw e;
      }
      if (typeof effect === 'function') return { applied: true, result: await effect(client) };
      await client.query(effect.text, effect.values ? [...effect.values] : []);
      return { applied: true };
    });
  }

  /** Deletes keys seen more than `olderThanMs` ago; returns how many. Their events are no longer deduped. */
  async expireInbox(olderThanMs: number): Promise<number> {
    if (!Number.isFinite(olderThanMs) || olderThanMs < 0) throw new EffectConfigError(`expireInbox: olderThanMs must be a non-negative number, got ${olderThanMs}`);
    const res = await run(this.pool, `expire inbox ${this.table}`, `DELETE FROM ${this.#quoted} WHERE seen_at < now() - make_interval(secs => $1::double precision / 1000)`, [olderThanMs]);
    return res.rowCount ?? 0;
  }
}

function isUniqueViolationOn(e: unknown, table: string): boolean {
  const err = e as { code?: unknown; table?: unknown };
  return typeof e === 'object' && e !== null && err.code === '23505' && err.table === table;
}

// ---------------------------------------------------------------------------------------------
// 3. Version guard

export interface VersionGuardSpec {
  readonly table: string;
  /** Default `id`. */
  readonly key?: string;
  /** Default `version`. */
  readonly versionColumn?: string;
  readonly columns: readonly string[];
}

export interface VersionedRow {
  readonly id: string;
  /** Monotonic per id, set by whoever produced the event (an aggregate version, a sequence number). */
  readonly version: number | bigint;
  readonly values: Row;
}

/**
 * Writes only when the incoming version is newer than the stored one and inserts when the row is
 * absent, as one statement: `INSERT … ON CONFLICT (id) DO UPDATE … WHERE t.version < EXCLUDED.version`
 * is the `UPDATE … WHERE id = $1 AND version < $n` guard, made atomic with the insert so two
 * racing first writes cannot both insert. A redelivered or out-of-order older event never
 * overwrites newer state; it returns `{ applied: false }`.
 */
export function versionGuard(pool: Pool, spec: VersionGuardSpec): (idempotencyKey: string, row: VersionedRow) => Promise<EffectResult> {
  const table = quoteIdent(spec.table);
  const k = quoteIdent(spec.key ?? 'id');
  const v = quoteIdent(spec.versionColumn ?? 'version');
  const cols = spec.columns.map(quoteIdent);
  const all = [k, v, ...cols];
  const text =
    `INSERT INTO ${table} AS t (${all.join(', ')}) VALUES (${all.map((_, i) => `$${i + 1}`).join(', ')}) ` +
    `ON CONFLICT (${k}) DO UPDATE SET ${[v, ...cols].map((c) => `${c} = EXCLUDED.${c}`).join(', ')} ` +
    `WHERE t.${v} < EXCLUDED.${v}`;
  return async (_idempotencyKey, row) => {
    const res = await run(pool, `versioned write to ${spec.table}`, text, [row.id, row.version, ...spec.columns.map((c) => row.values[c] ?? null)]);
    return { applied: (res.rowCount ?? 0) > 0 };
  };
}

// ---------------------------------------------------------------------------------------------
// 4. Naive (demonstration only)

export interface NaiveSpec {
  /** Default `accounts`. */
  readonly table?: string;
  /** Default `id`. */
  readonly key?: string;
  /** Default `balance`. */
  readonly column?: string;
}

/**
 * DEMO ONLY — NOT IDEMPOTENT. `UPDATE accounts SET balance = balance - $amount`: it modifies a
 * total and ignores the idempotency key, so every replay debits again. It exists to measure the
 * damage the other patterns prevent (test/effects/demo-accounts.test.ts).
 */
export function naive(pool: Pool, spec: NaiveSpec = {}): (idempotencyKey: string, debit: { readonly id: string; readonly amount: number }) => Promise<EffectResult> {
  const table = quoteIdent(spec.table ?? 'accounts');
  const k = quoteIdent(spec.key ?? 'id');
  const col = quoteIdent(spec.column ?? 'balance');
  const text = `UPDATE ${table} SET ${col} = ${col} - $2 WHERE ${k} = $1`;
  return async (_idempotencyKey, debit) => {
    const res = await run(pool, `naive debit of ${spec.table ?? 'accounts'}`, text, [debit.id, debit.amount]);
    return { applied: (res.rowCount ?? 0) > 0 };
  };
}

/** The four patterns bound to one pool, for callers that prefer one object. */
export function postgresSink(pool: Pool) {
  return {
    upsert: (spec: UpsertSpec) => upsert(pool, spec),
    inbox: (opts?: InboxOptions) => new Inbox(pool, opts),
    versionGuard: (spec: VersionGuardSpec) => versionGuard(pool, spec),
    naive: (spec?: NaiveSpec) => naive(pool, spec),
  };
}
export type PostgresSink = ReturnType<typeof postgresSink>;
