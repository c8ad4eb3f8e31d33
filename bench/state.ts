/**
 * npm run bench:state -- [--keys N] [--restore-records N] [--bootstrap host:port] [--json <file>]
 *
 * The in-memory and the persistent (LMDB) store side by side: put and get operations per second,
 * memory per million keys (heap and RSS growth, each store in a fresh process), and the restore
 * rate, both of the store alone (changelog records applied from memory) and end to end (a real
 * changelog topic on a local broker read by the worker's restore path). See bench/README.md.
 */
import { spawnSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, readdirSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { cpus, tmpdir } from 'node:os';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import { ensureTopics, withAdmin } from '../src/kafka/admin.ts';
import { stopLocalCluster } from '../src/kafka/local-cluster.ts';
import { restoreTasks } from '../src/runtime/task/restore.ts';
import type { RuntimeTask } from '../src/runtime/task/worker-topology.ts';
import { PersistentTaskState } from '../src/state/lmdb-store.ts';
import { InMemoryKeyValueStore, type KeyValueStore } from '../src/state/store.ts';
import { TransactionalStore } from '../src/state/transactional.ts';
import { produceAll } from '../src/verify/orders-input.ts';
import { startBenchBroker } from './lib/broker.ts';

const KINDS = ['memory', 'persistent'] as const;
type Kind = (typeof KINDS)[number];

const { values: flags } = parseArgs({
  options: {
    keys: { type: 'string' },
    'restore-records': { type: 'string' },
    bootstrap: { type: 'string' },
    json: { type: 'string' },
    child: { type: 'string' },
  },
  allowPositionals: false,
});
const keys = Number(flags.keys ?? 1_000_000);
const restoreRecords = Number(flags['restore-records'] ?? 500_000);
const log = (s: string) => process.stderr.write(`[bench:state ${new Date().toISOString().slice(11, 19)}] ${s}\n`);

/** Count-store-like records: a 12-byte key, a short decimal value. */
const keyOf = (i: number): Buffer => Buffer.from(`key-${String(i).padStart(8, '0')}`);
const valueOf = (i: number): Buffer => Buffer.from(String(i));
const perSecond = (n: number, ms: number): number => Math.round((n * 1000) / Math.max(ms, 0.001));

interface Opened {
  readonly store: KeyValueStore;
  /** Makes every write durable (persistent) and releases the store. */
  close(): Promise<void>;
  /** Bytes on disk, after close. */
  diskBytes(): number;
}

function openStore(kind: Kind): Opened {
  if (kind === 'memory') return { store: new InMemoryKeyValueStore(), close: async () => undefined, diskBytes: () => 0 };
  const dir = mkdtempSync(join(tmpdir(), 'onceflow-bench-state-'));
  const state = new PersistentTaskState(join(dir, 'task'));
  const store = state.storeFactory({ name: 'bench', kind: 'key-value', subtopology: 0, partition: 0 });
  return {
    store,
    // A checkpoint forces the flush and sync that a clean close costs.
    close: () => state.close([]),
    diskBytes: () => {
      const lmdb = join(dir, 'task', 'lmdb');
      const bytes = readdirSync(lmdb).reduce((n, f) => n + statSync(join(lmdb, f)).size, 0);
      rmSync(dir, { recursive: true, force: true });
      return bytes;
    },
  };
}

/** The LMDB store's write buffer to LMDB: part of what a put costs, so inside every timing. */
const flushStore = (store: KeyValueStore): void => (store as { flush?: () => void }).flush?.();

function timed(fn: () => void): number {
  const t0 = performance.now();
  fn();
  return performance.now() - t0;
}

interface OpsResult {
  readonly kind: Kind;
  readonly keys: number;
  readonly putOpsPerSec: number;
  readonly getOpsPerSec: number;
  readonly commitPathOpsPerSec: number;
  readonly applyRestorePerSec: number;
  readonly heapMbPerMillionKeys: number;
  readonly rssMbPerMillionKeys: number;
  readonly diskMbPerMillionKeys: number;
}

const gc = (): void => (globalThis as { gc?: () => void }).gc?.();
const mb = (bytes: number): number => Math.round((bytes / 1_048_576) * 10) / 10;

/**
 * Heap (JS heap plus Buffer memory) and RSS growth from filling a store, run first in a fresh
 * process so nothing else is in them. Keys and values are new Buffers per put, as deserialized
 * records are, so the store's copies or references are what is counted.
 */
async function measureMemory(kind: Kind): Promise<{ heap: number; rss: number; disk: number }> {
  gc();
  const before = process.memoryUsage();
  const opened = openStore(kind);
  for (let i = 0; i < keys; i++) opened.store.put(keyOf(i), valueOf(i));
  flushStore(opened.store);
  gc();
  const after = process.memoryUsage();
  if (opened.store.size !== keys) throw new Error(`${kind}: ${opened.store.size} of ${keys} keys stored`);
  await opened.close();
  return { heap: after.heapUsed + after.arrayBuffers - before.heapUsed - before.arrayBuffers, rss: after.rss - before.rss, disk: opened.diskBytes() };
}

/** One store kind in this (fresh) process, so heap and RSS growth belong to it alone. */
async function measureOps(kind: Kind): Promise<OpsResult> {
  const million = keys / 1_000_000;
  const memory = await measureMemory(kind);
  const keyBufs = Array.from({ length: keys }, (_, i) => keyOf(i));
  const values = Array.from({ length: keys }, (_, i) => valueOf(i));
  const opened = openStore(kind);
  const { store } = opened;
  const putMs = timed(() => {
    for (let i = 0; i < keys; i++) store.put(keyBufs[i]!, values[i]!);
    flushStore(store);
  });
  let hits = 0;
  let x = 12345;
  const getMs = timed(() => {
    for (let i = 0; i < keys; i++) {
      x = (x * 1103515245 + 12345) % 2147483648;
      if (store.get(keyBufs[x % keys]!) !== undefined) hits++;
    }
  });
  if (hits !== keys) throw new Error(`${kind}: ${hits} of ${keys} gets found their key`);

  // The engine's path: writes buffered per transaction, applied on commit every 20,000 records.
  const tx = new TransactionalStore('bench', 'bench-changelog', 0, store);
  const commitTx = () => {
    tx.flushChangelog(() => undefined);
    tx.commit();
  };
  const commitMs = timed(() => {
    for (let i = 0; i < keys; i++) {
      tx.put(keyBufs[(i * 7) % keys]!, values[i]!, 0);
      tx.endRecord(true);
      if (i % 20_000 === 19_999) commitTx();
    }
    commitTx();
    flushStore(store);
  });
  await opened.close();
  opened.diskBytes();

  // Restore's path: changelog records applied straight to committed state, on an empty store.
  const fresh = openStore(kind);
  const restoreTx = new TransactionalStore('bench', 'bench-changelog', 0, fresh.store);
  const applyMs = timed(() => {
    for (let i = 0; i < keys; i++) restoreTx.restore(keyBufs[i]!, values[i]!);
    restoreTx.commit();
    flushStore(fresh.store);
  });
  await fresh.close();
  fresh.diskBytes();

  return {
    kind,
    keys,
    putOpsPerSec: perSecond(keys, putMs),
    getOpsPerSec: perSecond(keys, getMs),
    commitPathOpsPerSec: perSecond(keys, commitMs),
    applyRestorePerSec: perSecond(keys, applyMs),
    heapMbPerMillionKeys: mb(memory.heap / million),
    rssMbPerMillionKeys: mb(memory.rss / million),
    diskMbPerMillionKeys: mb(memory.disk / million),
  };
}

interface RestoreResult {
  readonly kind: Kind;
  readonly records: number;
  readonly ms: number;
  readonly recordsPerSec: number;
}

/** The worker's restore (read_committed to partition EOF) from a real changelog topic into the store. */
async function measureRestore(kind: Kind, bootstrap: string, topic: string): Promise<RestoreResult> {
  const opened = openStore(kind);
  const store = new TransactionalStore('bench', topic, 0, opened.store);
  const task: RuntimeTask = {
    changelogs: [{ store: 'bench', topic, partition: 0 }],
    restore: (_s, key, value) => store.restore(key, value),
    process: () => undefined,
    commit: () => store.commit(),
    rollback: () => store.rollback(),
  };
  const t0 = performance.now();
  const records = await restoreTasks({ 'bootstrap.servers': bootstrap }, [task]);
  await opened.close();
  const ms = performance.now() - t0;
  opened.diskBytes();
  return { kind, records, ms: Math.round(ms), recordsPerSec: perSecond(records, ms) };
}

function runChild(kind: Kind): OpsResult {
  const r = spawnSync(process.execPath, ['--expose-gc', '--import', 'tsx', 'bench/state.ts', '--child', kind, '--keys', String(keys)], {
    encoding: 'utf8',
    stdio: ['ignore', 'pipe', 'inherit'],
    maxBuffer: 1 << 20,
  });
  if (r.status !== 0) throw new Error(`the ${kind} measurement failed (exit ${r.status})`);
  return JSON.parse(r.stdout) as OpsResult;
}

if (flags.child) {
  const kind = flags.child as Kind;
  if (!KINDS.includes(kind)) throw new Error(`unknown store kind ${kind}`);
  process.stdout.write(JSON.stringify(await measureOps(kind)));
  process.exit(0);
}

const ops: OpsResult[] = [];
for (const kind of KINDS) {
  log(`${kind}: ${keys} puts, gets, commit-path writes and restore applies`);
  ops.push(runChild(kind));
}

const restore: RestoreResult[] = [];
const started = flags.bootstrap === undefined;
const clusterDir = join('bench', 'results', 'tmp', `state-${Date.now().toString(36)}`);
let bootstrap = flags.bootstrap;
try {
  if (!bootstrap) {
    mkdirSync(clusterDir, { recursive: true });
    log(`starting a local broker in ${clusterDir}`);
    bootstrap = startBenchBroker(join(clusterDir, 'cluster'));
  }
  const topic = `bench-state-changelog-${Date.now().toString(36)}`;
  const broker = bootstrap;
  await withAdmin(broker, (a) => ensureTopics(a, [{ name: topic, partitions: 1, compact: true }]));
  log(`producing ${restoreRecords} changelog records to ${topic}`);
  await produceAll(broker, topic, Array.from({ length: restoreRecords }, (_, i) => ({ key: keyOf(i).toString(), value: valueOf(i).toString() })));
  // Alternating, twice each, so the broker's page cache is warm for both.
  for (const kind of [...KINDS, ...KINDS]) {
    const r = await measureRestore(kind, broker, topic);
    if (r.records !== restoreRecords) throw new Error(`${kind}: restored ${r.records} of ${restoreRecords} records`);
    log(`${kind}: restored ${r.records} records in ${r.ms} ms`);
    restore.push(r);
  }
} finally {
  if (started) {
    await stopLocalCluster(join(clusterDir, 'cluster'));
    rmSync(clusterDir, { recursive: true, force: true });
  }
}

const best = (kind: Kind) => Math.max(...restore.filter((r) => r.kind === kind).map((r) => r.recordsPerSec));
const results = {
  at: new Date().toISOString(),
  machine: { cpus: cpus().length, cpu: cpus()[0]?.model ?? 'unknown', node: process.version },
  keys,
  restoreRecords,
  stores: ops.map((o) => ({ ...o, restoreFromBrokerPerSec: best(o.kind) })),
  restoreRuns: restore,
};
const fmt = (n: number) => n.toLocaleString('en-US');
const header = '| store | put ops/s | get ops/s | commit-path writes/s | restore apply rec/s | restore from broker rec/s | heap MB / 1M keys | RSS MB / 1M keys | disk MB / 1M keys |';
const rows = results.stores.map(
  (s) =>
    `| ${s.kind} | ${fmt(s.putOpsPerSec)} | ${fmt(s.getOpsPerSec)} | ${fmt(s.commitPathOpsPerSec)} | ${fmt(s.applyRestorePerSec)} | ${fmt(s.restoreFromBrokerPerSec)} | ${s.heapMbPerMillionKeys} | ${s.rssMbPerMillionKeys} | ${s.diskMbPerMillionKeys} |`,
);
process.stdout.write(`${[header, header.replace(/[^|]+/g, ' --- '), ...rows].join('\n')}\n`);
const out = flags.json ?? join('bench', 'results', `state-${results.at.slice(0, 10)}.json`);
writeFileSync(out, `${JSON.stringify(results, null, 2)}\n`);
log(`wrote ${out}`);
