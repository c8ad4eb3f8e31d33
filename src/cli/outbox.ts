import type { Command } from 'commander';
import { defineCommand } from './commands.ts';
import pg from 'pg';
import { OnceflowError } from '../errors.ts';
import { createOutboxTable, OutboxRelay, type OutboxRelayOptions } from '../effects/outbox-relay.ts';
import { addClientOptions } from './client-options.ts';
import { connect, type Connection, type ConnectionFlags } from './connection.ts';

export const DEFAULT_PG_URL = 'postgres://postgres@127.0.0.1:5432/test';

export class OutboxCliError extends OnceflowError {
  readonly code = 'OUTBOX_CLI';
}

interface CommonOpts {
  table: string;
  pgUrl?: string;
}
export interface RelayOpts extends CommonOpts, ConnectionFlags {
  topic: string;
  batch: string;
  once?: boolean;
  idleMs: string;
}


function positiveInt(value: string, flag: string): number {
  const n = Number(value);
  if (!Number.isInteger(n) || n < 1) throw new OutboxCliError(`${flag} must be a positive integer, got ${JSON.stringify(value)}`);
  return n;
}

/** The relay's producer speaks to the cluster as every other client of the command line: the connection's client options. */
export function relayOptions(opts: Pick<RelayOpts, 'table' | 'topic'>, connection: Pick<Connection, 'bootstrap' | 'clientOptions'>, pool: OutboxRelayOptions['pool'], batchSize: number): OutboxRelayOptions {
  return { pool, table: opts.table, topic: opts.topic, bootstrap: connection.bootstrap, batchSize, producerConfig: connection.clientOptions };
}

export function registerOutbox(program: Command): void {
  const outbox = defineCommand(program, 'outbox');
  outbox
    .command('init')
    .description('create the outbox table (and its pending-rows index) if it does not exist')
    .option('--table <name>', 'outbox table', 'outbox')
    .option('--pg-url <url>', 'PostgreSQL connection string (default $ONCEFLOW_PG_URL, else the local test database)')
    .action(async (opts: CommonOpts) => {
      const pool = new pg.Pool({ connectionString: opts.pgUrl ?? process.env.ONCEFLOW_PG_URL ?? DEFAULT_PG_URL, max: 1 });
      try {
        await createOutboxTable(pool, opts.table);
        console.log(`outbox table ${opts.table} ready`);
      } finally {
        await pool.end();
      }
    });
  addClientOptions(outbox
    .command('relay')
    .description('publish pending outbox rows to a topic with an idempotent producer, then mark them sent (at-least-once; dedupe on the onceflow.event.id header)')
    .option('--table <name>', 'outbox table', 'outbox')
    .requiredOption('--topic <topic>', 'topic to publish to (must exist)')
    .option('--pg-url <url>', 'PostgreSQL connection string (default $ONCEFLOW_PG_URL, else the local test database)')
    .option('--batch <n>', 'rows per PostgreSQL transaction', '100')
    .option('--idle-ms <ms>', 'wait after an empty batch (without --once)', '500')
    .option('--once', 'publish until nothing is pending for this relay, then exit'))
    .action(async (opts: RelayOpts) => {
      const batchSize = positiveInt(opts.batch, '--batch');
      const idleMs = positiveInt(opts.idleMs, '--idle-ms');
      const connection = await connect(opts);
      const pool = new pg.Pool({ connectionString: opts.pgUrl ?? process.env.ONCEFLOW_PG_URL ?? DEFAULT_PG_URL, max: 2 });
      const relay = new OutboxRelay(relayOptions(opts, connection, pool, batchSize));
      const stop = new AbortController();
      // Stop between batches: a batch cut short is rolled back and republished, never lost.
      const onSignal = () => stop.abort();
      process.once('SIGINT', onSignal);
      process.once('SIGTERM', onSignal);
      try {
        await relay.start();
        const sent = opts.once ? await relay.drain() : await relay.run(stop.signal, idleMs);
        console.log(`published ${sent} event(s) from ${opts.table} to ${opts.topic}`);
      } finally {
        process.off('SIGINT', onSignal);
        process.off('SIGTERM', onSignal);
        await relay.stop();
        await pool.end();
      }
    });
}
