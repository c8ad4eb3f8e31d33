import type { Pool } from 'pg';
import { applyFact, applyInbox, applyNaive, applyVersioned, type DebitEvent, type DemoAccounts } from '../src/effects/demo-accounts.ts';
import { EffectConfigError, httpStatusError } from '../src/effects/errors.ts';
import { httpEffect } from '../src/effects/http.ts';
import { Inbox } from '../src/effects/postgres-sink.ts';

/**
 * How the payments example applies a debit outside Kafka. The `naive-*` modes are the broken
 * baselines the demo measures; the others are the design note's idempotency patterns.
 */
export const DEBIT_MODES = ['naive-sql', 'inbox-sql', 'fact-sql', 'version-sql', 'naive-http', 'key-http'] as const;
export type DebitMode = (typeof DEBIT_MODES)[number];

export const isIdempotentMode = (mode: DebitMode): boolean => !mode.startsWith('naive-');

export function parseDebitMode(value: string): DebitMode {
  if (!(DEBIT_MODES as readonly string[]).includes(value)) throw new EffectConfigError(`debit mode must be one of ${DEBIT_MODES.join(', ')}, got ${JSON.stringify(value)}`);
  return value as DebitMode;
}

export interface DebitTarget {
  /** PostgreSQL pool and schema of the accounts tables (`createDemoAccounts`), for the SQL modes. */
  readonly pool?: Pool;
  readonly schema?: string;
  /** The charge endpoint, for the HTTP modes. */
  readonly url?: string;
}

/** What the payments topology reports for each debit it applied. */
export interface DebitApplied {
  readonly eventId: string;
  readonly account: string;
  readonly amount: number;
  readonly mode: DebitMode;
}

export type ApplyDebit = (event: DebitEvent, idempotencyKey: string) => Promise<unknown>;

/** The effect function of one mode; it throws at build time when the mode's target is not given. */
export function debitEffect(mode: DebitMode, target: DebitTarget): ApplyDebit {
  if (mode === 'naive-http' || mode === 'key-http') {
    const url = target.url;
    if (!url) throw new EffectConfigError(`debit mode ${mode} needs an HTTP url`);
    if (mode === 'key-http') {
      const charge = httpEffect<DebitEvent>({ url, retry: { maxAttempts: 3, initialBackoffMs: 50, maxBackoffMs: 200 } });
      return (event, key) => charge(key, event);
    }
    // No idempotency key: the server cannot tell a replay from a new charge.
    return async (event) => {
      const res = await fetch(url, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(event) });
      const error = httpStatusError(res.status, 'POST', url, 1, await res.text());
      if (error) throw error;
    };
  }
  const { pool, schema } = target;
  if (!pool || !schema) throw new EffectConfigError(`debit mode ${mode} needs a PostgreSQL pool and schema`);
  // Building the accounts handle does no I/O: the tables exist already (createDemoAccounts).
  const db: DemoAccounts = { pool, schema, inbox: new Inbox(pool, { table: `${schema}.inbox` }) };
  const apply = { 'naive-sql': applyNaive, 'inbox-sql': applyInbox, 'fact-sql': applyFact, 'version-sql': applyVersioned }[mode];
  return (event) => apply(db, event);
}
