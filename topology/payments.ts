import pg from 'pg';
import { TopologyBuilder } from '../src/dsl/topology-builder.ts';
import { jsonSerde, stringSerde } from '../src/serdes/index.ts';
import type { DebitEvent } from '../src/effects/demo-accounts.ts';
import { debitEffect, parseDebitMode, type DebitApplied } from '../processors/payments.ts';

/**
 * Debit events applied to an account outside Kafka (a PostgreSQL row or an HTTP charge), then
 * reported to an output topic. The Kafka part is exactly-once; the debit is not: it runs again
 * whenever the transaction around it aborts or the worker dies before commit. Whether that
 * double-charges depends on ONCEFLOW_PAYMENTS_MODE (see processors/payments.ts).
 */
const env = process.env;
const mode = parseDebitMode(env.ONCEFLOW_PAYMENTS_MODE ?? 'inbox-sql');
const http = mode.endsWith('-http');

// pg.Pool connects on first query, so importing this file does no I/O.
const apply = debitEffect(
  mode,
  http
    ? { url: env.ONCEFLOW_PAYMENTS_URL ?? 'http://127.0.0.1:8080/charges' }
    : { pool: new pg.Pool({ connectionString: env.ONCEFLOW_PG_URL ?? 'postgres://postgres@127.0.0.1:5432/test', max: 2 }), schema: env.ONCEFLOW_PAYMENTS_SCHEMA ?? 'payments' },
);

const app = new TopologyBuilder({ appId: 'payments' });
app
  .stream(env.ONCEFLOW_PAYMENTS_INPUT ?? 'payments', { key: stringSerde, value: jsonSerde<DebitEvent>() })
  .effect(`debit-${mode}`, (_key, event, ctx) => apply(event, ctx.idempotencyKey), { idempotencyKey: (_key, event) => event.eventId })
  .mapValues((event): DebitApplied => ({ eventId: event.eventId, account: event.account, amount: event.amount, mode }))
  .to(env.ONCEFLOW_PAYMENTS_OUTPUT ?? 'payments-applied', { key: stringSerde, value: jsonSerde<DebitApplied>() });
export default app;
