export * from './errors.ts';
export { upsert, Inbox, versionGuard, naive, postgresSink, inTransaction, type EffectResult, type Row, type Statement, type UpsertSpec, type InboxOptions, type InboxResult, type VersionGuardSpec, type VersionedRow, type NaiveSpec, type PostgresSink } from './postgres-sink.ts';
export { httpEffect, backoffMs, DEFAULT_HTTP_RETRY, IDEMPOTENCY_KEY_HEADER, type HttpEffectOptions, type HttpEffectResult, type HttpRetryPolicy } from './http.ts';
export { createOutboxTable, writeWithOutbox, OutboxRelay, pendingCount, EVENT_ID_HEADER, type OutboxEvent, type OutboxRow, type OutboxRelayOptions, type OutboxRelayHooks } from './outbox-relay.ts';
export { quoteIdent } from './sql.ts';
