import type { Producer, LibrdKafkaError, DeliveryReport, MessageHeader } from '@confluentinc/kafka-javascript';
import type { ClientBase, Pool, PoolClient } from 'pg';
import { connectProducer, disconnect, flush, type RdConfig } from '../kafka/clients.ts';
import { classifyPgError, EffectConfigError, OutboxPublishError } from './errors.ts';
import { inTransaction } from './postgres-sink.ts';
import { bareName, quoteIdent } from './sql.ts';

/**
 * The outbox: the application writes its row and the event in one PostgreSQL transaction, and a
 * relay publishes committed events to Kafka afterwards. That makes "row written" and "event
 * exists" atomic locally; publication is at-least-once (a relay that dies after the broker acked
 * but before marking the row publishes it again), and the `onceflow.event.id` header lets the
 * consumer drop the repeat.
 *
 * Per-aggregate order, with any number of relays, rests on two locks (docs/effects.md#outbox):
 * - writers take a transaction-level advisory lock per aggregate before inserting its events, so
 *   for one aggregate the bigserial order is the commit order (otherwise id 11 could commit, and be
 *   published, before id 10);
 * - a relay publishes an aggregate's rows only while holding that aggregate's relay advisory lock,
 *   taken before it reads the rows, so no two relays ever hold rows of one aggregate at once.
 * Plain `FOR UPDATE SKIP LOCKED` would not do: relay B would skip row 10 locked by relay A and
 * publish row 11 of the same aggregate first.
 */

export const EVENT_ID_HEADER = 'onceflow.event.id';

export interface OutboxEvent {
  /** Kafka key: events with one aggregate key keep their order. */
  readonly aggregateKey: string;
  /** Stable across retries of the same fact; unique in the table. */
  readonly eventId: string;
  readonly payload: unknown;
  readonly headers?: Readonly<Record<string, string>>;
}

export interface OutboxRow {
  readonly id: string;
  readonly aggregateKey: string;
  readonly eventId: string;
  readonly payload: unknown;
  readonly headers: Readonly<Record<string, string>>;
  readonly createdAt: Date;
}

/** Two-int advisory lock space per table and purpose, so two outboxes in one database do not contend. */
function lockClass(table: string, purpose: 'write' | 'relay'): string {
  return `hashtext(${literal(`onceflow.outbox:${table}:${purpose}`)})`;
}
function literal(s: string): string {
  return `'${s.replace(/'/g, "''")}'`;
}

export async function createOutboxTable(db: Pool | ClientBase, table: string): Promise<void> {
  const t = quoteIdent(table);
  try {
    await db.query(`CREATE TABLE IF NOT EXISTS ${t} (
      id bigserial PRIMARY KEY,
      aggregate_key text NOT NULL,
      event_id text NOT NULL UNIQUE,
      payload jsonb NOT NULL,
      headers jsonb NOT NULL DEFAULT '{}'::jsonb,
      created_at timestamptz NOT NULL DEFAULT now(),
      sent_at timestamptz NULL
    )`);
    // The relay only ever looks at pending rows; keep that scan small however large the history.
    await db.query(`CREATE INDEX IF NOT EXISTS "${bareName(table)}_pending" ON ${t} (aggregate_key, id) WHERE sent_at IS NULL`);
  } catch (e) {
    throw classifyPgError(e, `create outbox ${table}`);
  }
}

/**
 * Runs `write` and inserts the events in one transaction on `client` (a checked-out pool client or
 * a Client; not a Pool, whose queries may land on different connections). `events` may depend on
 * what `write` returned. Returns `write`'s result once committed.
 */
export async function writeWithOutbox<T>(
  client: ClientBase,
  table: string,
  write: (client: ClientBase) => Promise<T>,
  events: readonly OutboxEvent[] | ((result: T) => readonly OutboxEvent[]),
): Promise<T> {
  const t = quoteIdent(table);
  try {
    await client.query('BEGIN');
    const result = await write(client);
    const list = typeof events === 'function' ? events(result) : events;
    // Sorted so two writers touching the same aggregates cannot deadlock on these locks.
    for (const key of [...new Set(list.map((e) => e.aggregateKey))].sort()) {
      await client.query(`SELECT pg_advisory_xact_lock(${lockClass(table, 'write')}, hashtext($1))`, [key]);
    }
    for (const e of list) {
      await client.query(`INSERT INTO ${t} (aggregate_key, event_id, payload, headers) VALUES ($1, $2, $3::jsonb, $4::jsonb)`, [
        e.aggregateKey,
        e.eventId,
        JSON.stringify(e.payload ?? null),
        JSON.stringify(e.headers ?? {}),
      ]);
    }
    await client.query('COMMIT');
    return result;
  } catch (e) {
    await client.query('ROLLBACK').catch(() => undefined);
    throw classifyPgError(e, `write with outbox ${table}`);
  }
}

export interface OutboxRelayHooks {
  /**
   * After the broker acknowledged a batch and before the rows are marked sent. Throwing here (or
   * exiting the process) is the crash the at-least-once duplicate comes from; tests use it.
   */
  readonly afterPublish?: (rows: readonly OutboxRow[]) => void | Promise<void>;
}

export interface OutboxRelayOptions {
  readonly pool: Pool;
  readonly table: string;
  readonly topic: string;
  readonly bootstrap: string;
  /** Most rows published per PostgreSQL transaction. Default 100. */
  readonly batchSize?: number;
  /** Wait for broker acks this long before the batch counts as failed. Default 30 s. */
  readonly ackTimeoutMs?: number;
  /** Extra producer settings; idempotence and acks=all cannot be turned off. */
  readonly producerConfig?: RdConfig;
  readonly hooks?: OutboxRelayHooks;
}

interface Pending {
  readonly total: number;
  acked: number;
  readonly failed: string[];
  firstError?: LibrdKafkaError;
  done?: () => void;
}

export class OutboxRelay {
  readonly #opts: Required<Pick<OutboxRelayOptions, 'batchSize' | 'ackTimeoutMs'>> & OutboxRelayOptions;
  readonly #t: string;
  #producer: Producer | undefined;
  #pending: Pending | undefined;
  #published = 0;

  constructor(opts: OutboxRelayOptions) {
    const batchSize = opts.batchSize ?? 100;
    if (!Number.isInteger(batchSize) || batchSize < 1) throw new EffectConfigError(`outbox relay: batch size must be an integer >= 1, got ${batchSize}`);
    this.#opts = { ...opts, batchSize, ackTimeoutMs: opts.ackTimeoutMs ?? 30_000 };
    this.#t = quoteIdent(opts.table);
  }

  /** Rows this relay has published (acked by the broker), including any later rolled back. */
  get published(): number {
    return this.#published;
  }

  async start(): Promise<void> {
    if (this.#producer) return;
    const producer = await connectProducer({
      'bootstrap.servers': this.#opts.bootstrap,
      'linger.ms': 5,
      ...this.#opts.producerConfig,
      // Broker-side dedupe of the producer's own retries, and order kept with several requests in flight.
      'enable.idempotence': true,
      'acks': 'all',
      'dr_cb': true,
    });
    producer.on('delivery-report', (err: LibrdKafkaError, report: DeliveryReport) => this.#onReport(err, report));
    this.#producer = producer;
  }

  async stop(): Promise<void> {
    const p = this.#producer;
    this.#producer = undefined;
    if (p) await disconnect(p);
  }

  #onReport(err: LibrdKafkaError | null | undefined, report: DeliveryReport): void {
    const pending = this.#pending;
    if (!pending) return;
    pending.acked++;
    if (err) {
      pending.failed.push(String(report.opaque));
      pending.firstError ??= err;
    }
    if (pending.acked === pending.total) pending.done?.();
  }

  /**
   * One batch: lock aggregates, lock and read their oldest pending rows, publish, wait for every
   * ack, mark them sent, commit. Returns the number of rows marked sent (0: nothing this relay may
   * take right now). A failed ack rolls back, leaving the rows pending for the next batch.
   */
  async runOnce(): Promise<number> {
    const producer = this.#producer;
    if (!producer) throw new EffectConfigError('outbox relay: start() it before running batches');
    const { pool, table, topic, batchSize } = this.#opts;
    return inTransaction(pool, `outbox relay ${table}`, async (client) => {
      const rows = await this.#claim(client, batchSize);
      if (rows.length === 0) return 0;
      await this.#publish(producer, topic, rows);
      await this.#opts.hooks?.afterPublish?.(rows);
      await client.query(`UPDATE ${this.#t} SET sent_at = now() WHERE id = ANY($1::bigint[])`, [rows.map((r) => r.id)]);
      return rows.length;
    });
  }

  /** Batches until one comes back empty; returns the rows marked sent. */
  async drain(): Promise<number> {
    let total = 0;
    for (let n = await this.runOnce(); n > 0; n = await this.runOnce()) total += n;
    return total;
  }

  /** Batches until `signal` aborts, waiting `idleMs` after an empty one. */
  async run(signal: AbortSignal, idleMs = 500): Promise<number> {
    let total = 0;
    while (!signal.aborted) {
      const n = await this.runOnce();
      total += n;
      if (n === 0) await new Promise<void>((r) => {
        const timer = setTimeout(r, idleMs);
        signal.addEventListener('abort', () => (clearTimeout(timer), r()), { once: true });
      });
    }
    return total;
  }

  async #claim(client: PoolClient, batchSize: number): Promise<OutboxRow[]> {
    // Aggregates in the order of their oldest pending row; a few more than the batch so that a
    // relay finding the first ones taken by another relay still has work.
    const heads = await client.query<{ aggregate_key: string; n: string }>(
      `SELECT aggregate_key, count(*) AS n FROM ${this.#t} WHERE sent_at IS NULL GROUP BY aggregate_key ORDER BY min(id) LIMIT $1`,
      [batchSize * 4],
    );
    const owned: string[] = [];
    let rowsOwned = 0;
    for (const h of heads.rows) {
      if (rowsOwned >= batchSize) break;
      const got = await client.query<{ ok: boolean }>(`SELECT pg_try_advisory_xact_lock(${lockClass(this.#opts.table, 'relay')}, hashtext($1)) AS ok`, [h.aggregate_key]);
      if (got.rows[0]?.ok) {
        owned.push(h.aggregate_key);
        rowsOwned += Number(h.n);
      }
    }
    if (owned.length === 0) return [];
    // A new statement, so a new snapshot: it sees every mark committed by the lock's previous holder.
    // FOR UPDATE without SKIP LOCKED: skipping a row of an owned aggregate would reorder it.
    const res = await client.query<{ id: string; aggregate_key: string; event_id: string; payload: unknown; headers: Record<string, string>; created_at: Date }>(
      `SELECT id, aggregate_key, event_id, payload, headers, created_at FROM ${this.#t}
        WHERE sent_at IS NULL AND aggregate_key = ANY($1::text[]) ORDER BY id LIMIT $2 FOR UPDATE`,
      [owned, batchSize],
    );
    return res.rows.map((r) => ({ id: r.id, aggregateKey: r.aggregate_key, eventId: r.event_id, payload: r.payload, headers: r.headers, createdAt: r.created_at }));
  }

  async #publish(producer: Producer, topic: string, rows: readonly OutboxRow[]): Promise<void> {
    const pending: Pending = { total: rows.length, acked: 0, failed: [] };
    const allAcked = new Promise<void>((resolve) => (pending.done = resolve));
    this.#pending = pending;
    try {
      for (const r of rows) {
        const headers: MessageHeader[] = [...Object.entries(r.headers).map(([k, v]) => ({ [k]: String(v) })), { [EVENT_ID_HEADER]: r.eventId }];
        producer.produce(topic, null, Buffer.from(JSON.stringify(r.payload)), r.aggregateKey, r.createdAt.getTime(), r.eventId, headers);
      }
      await flush(producer, this.#opts.ackTimeoutMs);
      // flush returns once librdkafka's queue is empty; the JS delivery events may trail it.
      let timer: NodeJS.Timeout | undefined;
      const timedOut = new Promise<'timeout'>((r) => (timer = setTimeout(() => r('timeout'), this.#opts.ackTimeoutMs)));
      const outcome = await Promise.race([allAcked, timedOut]);
      clearTimeout(timer);
      if (outcome === 'timeout') {
        throw new OutboxPublishError(`outbox relay ${this.#opts.table}: ${pending.total - pending.acked} of ${pending.total} records unacknowledged after ${this.#opts.ackTimeoutMs} ms`, rows.map((r) => r.eventId));
      }
      if (pending.failed.length > 0) {
        throw new OutboxPublishError(`outbox relay ${this.#opts.table}: ${pending.failed.length} of ${pending.total} records failed: ${pending.firstError?.message ?? 'unknown'}`, pending.failed, pending.firstError);
      }
      this.#published += rows.length;
    } catch (e) {
      if (e instanceof OutboxPublishError) throw e;
      throw new OutboxPublishError(`outbox relay ${this.#opts.table}: publishing to ${topic} failed: ${e instanceof Error ? e.message : String(e)}`, rows.map((r) => r.eventId), e);
    } finally {
      this.#pending = undefined;
    }
  }
}

/** Rows not yet marked sent. */
export async function pendingCount(db: Pool | ClientBase, table: string): Promise<number> {
  try {
    const res = await db.query<{ n: string }>(`SELECT count(*) AS n FROM ${quoteIdent(table)} WHERE sent_at IS NULL`);
    return Number(res.rows[0]?.n ?? 0);
  } catch (e) {
    throw classifyPgError(e, `count pending in ${table}`);
  }
}
