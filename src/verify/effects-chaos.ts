import { randomBytes } from 'node:crypto';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import pg from 'pg';
import { IDEMPOTENCY_KEY_HEADER } from '../effects/http.ts';
import { balanceChangeCount, balanceDrift, balances, createDemoAccounts, demoEvents, dropDemoAccounts, expectedBalances, type DebitEvent, type DemoAccounts } from '../effects/demo-accounts.ts';
import { ensureTopics, withAdmin } from '../kafka/admin.ts';
import { exampleTopology } from '../kafka/paths.ts';
import { readTopic } from '../kafka/read-topic.ts';
import { isIdempotentMode, type DebitMode } from '../../processors/payments.ts';
import { produceAll } from './orders-input.ts';
import { waitCaughtUp } from './progress.ts';
import { WorkerProcess } from './worker-process.ts';

export interface EffectsChaosOptions {
  readonly bootstrap: string;
  readonly pgUrl: string;
  readonly mode: DebitMode;
  readonly records: number;
  /** Incarnations that are SIGKILLed after their effects ran and before their transaction committed. */
  readonly kills: number;
  readonly partitions?: number;
  readonly log?: (line: string) => void;
}

export interface EffectsChaosResult {
  readonly mode: DebitMode;
  readonly idempotent: boolean;
  readonly records: number;
  readonly kills: number;
  /** Calls that reached the target (HTTP modes only: a SQL call that was rolled back leaves no trace). */
  readonly calls: number | undefined;
  /** Effects that landed: balance changes in PostgreSQL, charges made by the HTTP server. */
  readonly effects: number;
  readonly duplicateEffects: number;
  /** Sum over accounts of |balance - expected|. */
  readonly balanceDrift: number;
  /** The Kafka side, read with read_committed: one output per input, whatever the effect did. */
  readonly outputRecords: number;
  readonly outputDuplicates: number;
}

const ACCOUNTS = ['acc-0', 'acc-1', 'acc-2', 'acc-3', 'acc-4'];
const TOPOLOGY = exampleTopology('payments');

/** A charge endpoint that dedupes on the Idempotency-Key header when one is sent, as a payment API does. */
class ChargeServer {
  calls = 0;
  charges = 0;
  readonly balances = new Map<string, number>(ACCOUNTS.map((a) => [a, 0]));
  readonly #seen = new Set<string>();
  readonly #server: Server = createServer((req, res) => {
    let body = '';
    req.on('data', (chunk: Buffer) => (body += chunk.toString()));
    req.on('end', () => {
      this.calls++;
      const key = req.headers[IDEMPOTENCY_KEY_HEADER.toLowerCase()];
      if (typeof key === 'string' && this.#seen.has(key)) {
        res.writeHead(200).end('{"replayed":true}');
        return;
      }
      if (typeof key === 'string') this.#seen.add(key);
      const debit = JSON.parse(body) as DebitEvent;
      this.charges++;
      this.balances.set(debit.account, (this.balances.get(debit.account) ?? 0) - debit.amount);
      res.writeHead(201).end('{"charged":true}');
    });
  });

  async listen(): Promise<string> {
    await new Promise<void>((resolve) => this.#server.listen(0, '127.0.0.1', resolve));
    return `http://127.0.0.1:${(this.#server.address() as AddressInfo).port}/charges`;
  }

  close(): Promise<void> {
    return new Promise((resolve) => this.#server.close(() => resolve()));
  }
}

/**
 * The design note's exercise, run for real: a worker applies a debit outside Kafka for each record
 * and is SIGKILLed after the effects and before its transaction commits, `kills` times over; a last
 * incarnation finishes. Kafka's own output stays exactly-once; the effect is applied once per
 * record only where the target dedupes on the stable idempotency key.
 */
export async function runEffectsChaos(opts: EffectsChaosOptions): Promise<EffectsChaosResult> {
  const log = opts.log ?? (() => undefined);
  const tag = `${opts.mode}-${randomBytes(4).toString('hex')}`;
  const appId = `payments-${tag}`;
  const input = `payments-in-${tag}`;
  const output = `payments-out-${tag}`;
  const events = demoEvents(opts.records, ACCOUNTS);
  const http = opts.mode.endsWith('-http');
  const pool = new pg.Pool({ connectionString: opts.pgUrl, max: 2 });
  const server = http ? new ChargeServer() : undefined;
  let db: DemoAccounts | undefined;
  const workers: WorkerProcess[] = [];
  try {
    const env: Record<string, string> = { ONCEFLOW_BOOTSTRAP: opts.bootstrap, ONCEFLOW_PAYMENTS_MODE: opts.mode, ONCEFLOW_PAYMENTS_INPUT: input, ONCEFLOW_PAYMENTS_OUTPUT: output, ONCEFLOW_PG_URL: opts.pgUrl };
    if (server) env.ONCEFLOW_PAYMENTS_URL = await server.listen();
    else {
      db = await createDemoAccounts(pool, `onceflow_${tag.replace(/-/g, '_')}`, ACCOUNTS);
      env.ONCEFLOW_PAYMENTS_SCHEMA = db.schema;
    }
    await withAdmin(opts.bootstrap, (a) => ensureTopics(a, [{ name: input, partitions: opts.partitions ?? 2 }, { name: output, partitions: opts.partitions ?? 2 }]));
    // Keyed by account: one partition per account keeps its debits in order, which the version guard needs.
    await produceAll(opts.bootstrap, input, events.map((e) => ({ key: e.account, value: JSON.stringify(e) })));
    const start = (instance: string, extra: Record<string, string> = {}) => {
      const w = new WorkerProcess(instance, TOPOLOGY, ['--app-id', appId, '--instance-id', instance], { ...env, ...extra });
      workers.push(w);
      return w;
    };
    for (let k = 1; k <= opts.kills; k++) {
      const doomed = start('w', { ONCEFLOW_CHAOS_KILL_AT: 'after-produce:1' });
      const exit = await doomed.exitWithin(90_000);
      if (exit?.signal !== 'SIGKILL') throw new Error(`${opts.mode}: incarnation ${k} did not die between its effects and its commit (exit ${JSON.stringify(exit)}); stderr: ${doomed.stderr.slice(-5).join('\n')}`);
      log(`${opts.mode}: kill ${k}/${opts.kills}: SIGKILL after the effects, before the commit`);
    }
    const last = start('w');
    await waitCaughtUp({ bootstrap: opts.bootstrap, groupId: appId, plainTopics: [input], timeoutMs: 120_000 });
    await last.stop(15_000);

    const out = await readTopic(opts.bootstrap, output, { isolation: 'read_committed' });
    const ids = out.map((r) => (JSON.parse(r.value?.toString() ?? '{}') as { eventId?: string }).eventId);
    const expected = expectedBalances(events, ACCOUNTS);
    const actual = server ? server.balances : await balances(db!);
    const drift = [...balanceDrift(actual, expected).values()].reduce((s, v) => s + Math.abs(v), 0);
    const effects = server ? server.charges : await balanceChangeCount(db!);
    return {
      mode: opts.mode,
      idempotent: isIdempotentMode(opts.mode),
      records: events.length,
      kills: opts.kills,
      calls: server?.calls,
      effects,
      duplicateEffects: effects - events.length,
      balanceDrift: drift,
      outputRecords: out.length,
      outputDuplicates: out.length - new Set(ids).size,
    };
  } finally {
    await Promise.all(workers.map((w) => w.stop(10_000)));
    await server?.close();
    if (db) await dropDemoAccounts(db);
    await pool.end();
  }
}
