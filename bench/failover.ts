/**
 * npm run bench:failover -- [--keys 1000000] [--standbys 0,1,2] [--session-timeout-ms 6000] [--rate 2000] [--json <file>]
 *
 * Failover of large state (issue #41, standby replicas). Three replicas count records per key in
 * persistent (LMDB) stores, a million distinct keys over 6 partitions, exactly once. While updates
 * arrive at `--rate` records a second, the replica with instance id `a` is SIGKILLed; for each of its
 * tasks the survivors report, from their events: when the partition was assigned to them (the
 * group's session timeout dominates), how many changelog records the restore read and for how long,
 * whether it started from a warm copy (standby), and when the new owner's first commit after the
 * restore came. Once the feed stops, every key's last committed count is checked against the input.
 * Run once per standby count; results go to bench/results/failover-<date>.json (and `--json`).
 */
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { parseArgs } from 'node:util';
import { ensureTopics, withAdmin } from '../src/kafka/admin.ts';
import { stopLocalCluster } from '../src/kafka/local-cluster.ts';
import { readTopic } from '../src/kafka/read-topic.ts';
import { prng, produceAll } from '../src/verify/orders-input.ts';
import { waitCaughtUp } from '../src/verify/progress.ts';
import { WorkerProcess, type WorkerEventLine } from '../src/verify/worker-process.ts';
import { freePort } from '../test/support/ports.ts';
import { startBenchBroker } from './lib/broker.ts';
import { endOffsets } from './lib/measure.ts';

const { values: flags } = parseArgs({
  options: {
    keys: { type: 'string', default: '1000000' },
    standbys: { type: 'string', default: '0,1,2' },
    'session-timeout-ms': { type: 'string', default: '6000' },
    rate: { type: 'string', default: '2000' },
    bootstrap: { type: 'string' },
    json: { type: 'string' },
  },
});
const keys = Number(flags.keys);
const sessionTimeoutMs = Number(flags['session-timeout-ms']);
const rate = Number(flags.rate);
const partitions = 6;
const log = (line: string) => console.error(`[failover ${new Date().toISOString().slice(11, 19)}] ${line}`);
const list = (e: WorkerEventLine, field: string): string[] => (Array.isArray(e[field]) ? (e[field] as string[]) : []);

interface Takeover {
  readonly newOwner: string;
  readonly partitions: number[];
  /** From the SIGKILL until the new owner began taking the partitions over (its restore's start). */
  readonly assignedAfterMs: number;
  readonly restoredRecords: number;
  readonly restoreMs: number;
  readonly fromCheckpoint: number;
  /** Tasks the new owner took over from its warm copies. */
  readonly fromStandby: string[];
  /** From the SIGKILL until the new owner's first commit after the restore. */
  readonly firstCommitAfterMs: number;
}

/** A gauge of a worker's `/metrics`. */
async function gauge(port: number, name: string): Promise<number | undefined> {
  try {
    const text = await (await fetch(`http://127.0.0.1:${port}/metrics`, { signal: AbortSignal.timeout(5_000) })).text();
    const line = text.split('\n').find((l) => l.startsWith(`${name}{`) || l.startsWith(`${name} `));
    return line === undefined ? undefined : Number(line.split(' ').at(-1));
  } catch {
    return undefined;
  }
}

/** Waits until every replica keeps tasks warm and its copies have applied their changelogs to the ends last fetched. */
async function standbysCaughtUp(ports: readonly number[], timeoutMs: number): Promise<number[]> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const lags = await Promise.all(ports.map(async (port) => ((await gauge(port, 'onceflow_standby_tasks')) ?? 0) > 0 ? await gauge(port, 'onceflow_standby_lag_records') : undefined));
    if (lags.every((lag) => lag !== undefined && lag < 100)) return lags as number[];
    if (Date.now() > deadline) throw new Error(`the standby copies did not catch up: lags ${JSON.stringify(lags)}`);
    await sleep(1_000);
  }
}

/** The takeovers of `lost` partitions by the survivors, found in their events after `killedAt`. */
async function takeovers(survivors: readonly WorkerProcess[], input: string, lost: ReadonlySet<number>, killedAt: number, timeoutMs: number): Promise<Takeover[]> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const found: Takeover[] = [];
    for (const w of survivors) {
      w.events.forEach((e, i) => {
        if (e.type !== 'assigned' || w.arrivedAt[i]! < killedAt) return;
        const moved = list(e, 'partitions').filter((p) => p.startsWith(`${input}-`)).map((p) => Number(p.slice(input.length + 1))).filter((p) => lost.has(p));
        if (moved.length === 0) return;
        // The worker restores a partition's tasks before it starts reading it: `restored` comes before `assigned`.
        let restoredAt = -1;
        for (let j = i - 1; j >= 0 && w.arrivedAt[j]! >= killedAt; j--) {
          if (w.events[j]!.type === 'restored') {
            restoredAt = j;
            break;
          }
        }
        const committedAt = w.events.findIndex((c, j) => j > i && c.type === 'committed' && Number(c.records) > 0);
        if (committedAt < 0) return;
        const restored = restoredAt >= 0 ? w.events[restoredAt]! : undefined;
        const restoreMs = Number(restored?.ms ?? 0);
        const released = w.events.filter((s, j) => j <= i && w.arrivedAt[j]! >= killedAt && s.type === 'standby').flatMap((s) => list(s, 'released'));
        found.push({
          newOwner: w.name,
          partitions: moved,
          assignedAfterMs: (restored ? w.arrivedAt[restoredAt]! - restoreMs : w.arrivedAt[i]!) - killedAt,
          restoredRecords: Number(restored?.records ?? 0),
          restoreMs,
          fromCheckpoint: Number(restored?.fromCheckpoint ?? 0),
          fromStandby: released,
          firstCommitAfterMs: w.arrivedAt[committedAt]! - killedAt,
        });
      });
    }
    if (new Set(found.flatMap((t) => t.partitions)).size >= lost.size) return found;
    if (Date.now() > deadline) throw new Error(`the partitions of the killed replica were not all taken over: ${JSON.stringify(found)}`);
    await sleep(500);
  }
}

async function runOnce(bootstrap: string, standbyReplicas: number, workDir: string) {
  const run = `${Date.now().toString(36)}-s${standbyReplicas}`;
  const names = { input: `failover-${run}-in`, output: `failover-${run}-out`, appId: `failover-${run}` };
  const stateDir = join(workDir, `state-${standbyReplicas}`);
  mkdirSync(stateDir, { recursive: true });
  await withAdmin(bootstrap, (admin) => ensureTopics(admin, [{ name: names.input, partitions }, { name: names.output, partitions }]));
  const workers: WorkerProcess[] = [];
  const ports = { a: 0, b: 0, c: 0 };
  for (const instance of ['a', 'b', 'c'] as const) ports[instance] = await freePort();
  const start = (instance: 'a' | 'b' | 'c') => {
    const w = new WorkerProcess(instance, 'test/fixtures/count-by-key.ts', ['--app-id', names.appId, '--instance-id', instance, '--state-store', 'persistent', '--state-dir', stateDir, '--http-port', String(ports[instance])], {
      ONCEFLOW_BOOTSTRAP: bootstrap,
      COUNT_INPUT: names.input,
      COUNT_OUTPUT: names.output,
      ONCEFLOW_STANDBY_REPLICAS: String(standbyReplicas),
      ONCEFLOW_SESSION_TIMEOUT_MS: String(sessionTimeoutMs),
    });
    workers.push(w);
    return w;
  };
  const caughtUp = (timeoutMs: number) => waitCaughtUp({ bootstrap, groupId: names.appId, plainTopics: [names.input], timeoutMs, stableMs: 4_000 });
  try {
    log(`standbyReplicas ${standbyReplicas}: producing ${keys} distinct keys`);
    const value = 'x'.repeat(100);
    for (let from = 0; from < keys; from += 100_000) {
      await produceAll(bootstrap, names.input, Array.from({ length: Math.min(100_000, keys - from) }, (_, i) => ({ key: `key-${from + i}`, value })));
    }
    const [a, b, c] = [start('a'), start('b'), start('c')] as const;
    await caughtUp(1_800_000);
    log('counted every key');
    const standbyLagAtKill = standbyReplicas > 0 ? await standbysCaughtUp([ports.a, ports.b, ports.c], 1_800_000) : [];
    if (standbyReplicas > 0) log(`standby copies caught up: lags ${standbyLagAtKill.join(', ')}`);

    const owned = new Set<number>();
    for (const e of a.events) {
      const ps = list(e, 'partitions').filter((p) => p.startsWith(`${names.input}-`)).map((p) => Number(p.slice(names.input.length + 1)));
      if (e.type === 'assigned') for (const p of ps) owned.add(p);
      if (e.type === 'revoked') for (const p of ps) owned.delete(p);
    }
    const random = prng(11);
    const updated = new Map<string, number>();
    let feeding = true;
    const feed = (async () => {
      while (feeding) {
        const batch = Array.from({ length: Math.max(1, Math.floor(rate / 10)) }, () => {
          const key = `key-${Math.floor(random() * keys)}`;
          updated.set(key, (updated.get(key) ?? 0) + 1);
          return { key, value };
        });
        await produceAll(bootstrap, names.input, batch);
        await sleep(100);
      }
    })();
    await sleep(5_000);
    log(`SIGKILL of a, which owns partitions ${[...owned].join(', ')}`);
    const killedAt = Date.now();
    a.kill('SIGKILL');
    await a.exit();
    const found = await takeovers([b, c], names.input, owned, killedAt, 1_800_000);
    await sleep(3_000);
    feeding = false;
    await feed;
    await caughtUp(1_800_000);
    const changelogRecords = await withAdmin(bootstrap, async (admin) => {
      let total = 0;
      for (const t of (await admin.listTopics()).filter((name: string) => name.startsWith(names.appId) && name.endsWith('-changelog'))) for (const end of (await endOffsets(admin, t)).values()) total += end;
      return total;
    });
    await Promise.all([b.stop(), c.stop()]);
    const last = new Map<string, number>();
    for (const r of (await readTopic(bootstrap, names.output)).sort((x, y) => x.partition - y.partition || x.offset - y.offset)) last.set(r.key!.toString(), Number(r.value!.toString()));
    let mismatches = 0;
    for (let i = 0; i < keys; i++) if (last.get(`key-${i}`) !== 1 + (updated.get(`key-${i}`) ?? 0)) mismatches++;
    const row = { standbyReplicas, standbyLagAtKill, killedPartitions: [...owned].sort(), takeovers: found, slowestFirstCommitAfterMs: Math.max(...found.map((t) => t.firstCommitAfterMs)), restoredRecords: found.reduce((n, t) => n + t.restoredRecords, 0), changelogRecords, updates: [...updated.values()].reduce((n, v) => n + v, 0), keysChecked: keys, mismatches };
    log(JSON.stringify(row));
    return row;
  } finally {
    await Promise.all(workers.map((w) => w.stop().catch(() => undefined)));
  }
}

const workDir = mkdtempSync(join(tmpdir(), 'onceflow-failover-'));
let bootstrap = flags.bootstrap;
const ownBroker = bootstrap === undefined;
if (bootstrap === undefined) {
  log('starting a local broker');
  bootstrap = startBenchBroker(join(workDir, 'cluster'));
}
try {
  const rows = [];
  for (const standbys of flags.standbys.split(',').map(Number)) rows.push(await runOnce(bootstrap, standbys, workDir));
  const result = { date: new Date().toISOString(), command: `npm run bench:failover -- --keys ${keys} --standbys ${flags.standbys} --session-timeout-ms ${sessionTimeoutMs} --rate ${rate}`, keys, partitions, replicas: 3, sessionTimeoutMs, rate, rows };
  console.log(JSON.stringify(result, null, 2));
  mkdirSync(join('bench', 'results'), { recursive: true });
  writeFileSync(join('bench', 'results', `failover-${result.date.slice(0, 10)}.json`), `${JSON.stringify(result, null, 2)}\n`);
  if (flags.json) writeFileSync(flags.json, `${JSON.stringify(result, null, 2)}\n`);
} finally {
  if (ownBroker) await stopLocalCluster(join(workDir, 'cluster'));
  rmSync(workDir, { recursive: true, force: true });
}
