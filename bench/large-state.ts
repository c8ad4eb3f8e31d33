/**
 * npm run bench:large-state -- [--keys 1000000] [--updates 200000] [--bootstrap host:port] [--json <file>]
 *
 * Large state under load (issue: production faults, item 5). One worker counts records per key in a
 * persistent (LMDB) store with a million distinct keys, under exactly once:
 *  1. the keys arrive once each; the worker's resident memory is sampled throughout;
 *  2. updates of random keys arrive, and the worker is SIGKILLed halfway through them;
 *  3. a new process with the same instance id and state directory restores: how many changelog
 *     records it reads (against the whole changelog) and how long it takes;
 *  4. every key's last committed count is checked against the input (1 + its updates).
 * Results go to bench/results/large-state-<date>.json (and `--json`).
 */
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { parseArgs } from 'node:util';
import { ensureTopics, withAdmin } from '../src/kafka/admin.ts';
import { stopLocalCluster } from '../src/kafka/local-cluster.ts';
import { readTopic } from '../src/kafka/read-topic.ts';
import { prng, produceAll } from '../src/verify/orders-input.ts';
import { waitCaughtUp } from '../src/verify/progress.ts';
import { WorkerProcess } from '../src/verify/worker-process.ts';
import { startBenchBroker } from './lib/broker.ts';
import { endOffsets } from './lib/measure.ts';

const { values: flags } = parseArgs({
  options: {
    keys: { type: 'string', default: '1000000' },
    updates: { type: 'string', default: '200000' },
    bootstrap: { type: 'string' },
    json: { type: 'string' },
  },
});
const keys = Number(flags.keys);
const updates = Number(flags.updates);
const partitions = 6;
const log = (line: string) => console.error(`[large-state ${new Date().toISOString().slice(11, 19)}] ${line}`);

/** Resident and peak resident memory of a live process, in MB. */
function memoryOf(pid: number): { rssMb: number; peakMb: number } | undefined {
  try {
    const status = readFileSync(`/proc/${pid}/status`, 'utf8');
    const kb = (field: string) => Number(new RegExp(`${field}:\\s+(\\d+) kB`).exec(status)?.[1] ?? 0);
    return { rssMb: kb('VmRSS') / 1024, peakMb: kb('VmHWM') / 1024 };
  } catch {
    return undefined;
  }
}

const workDir = mkdtempSync(join(tmpdir(), 'onceflow-large-state-'));
let bootstrap = flags.bootstrap;
const ownBroker = bootstrap === undefined;
if (bootstrap === undefined) {
  log('starting a local broker');
  bootstrap = startBenchBroker(join(workDir, 'cluster'));
}
const run = Date.now().toString(36);
const names = { input: `large-state-${run}-in`, output: `large-state-${run}-out`, appId: `large-state-${run}` };
const stateDir = join(workDir, 'state');
mkdirSync(stateDir);
const workers: WorkerProcess[] = [];
try {
  await withAdmin(bootstrap, (admin) =>
    ensureTopics(admin, [
      { name: names.input, partitions },
      { name: names.output, partitions },
    ]),
  );
  const start = (name: string) => {
    const w = new WorkerProcess(name, 'test/fixtures/count-by-key.ts', ['--app-id', names.appId, '--instance-id', 'a', '--state-store', 'persistent', '--state-dir', stateDir], {
      ONCEFLOW_BOOTSTRAP: bootstrap!,
      COUNT_INPUT: names.input,
      COUNT_OUTPUT: names.output,
    });
    workers.push(w);
    return w;
  };
  const caughtUp = (timeoutMs: number) => waitCaughtUp({ bootstrap: bootstrap!, groupId: names.appId, plainTopics: [names.input], timeoutMs, stableMs: 4_000 });

  log(`producing ${keys} distinct keys`);
  const value = 'x'.repeat(100);
  for (let from = 0; from < keys; from += 100_000) {
    await produceAll(bootstrap, names.input, Array.from({ length: Math.min(100_000, keys - from) }, (_, i) => ({ key: `key-${from + i}`, value })));
  }
  const first = start('first');
  await first.waitFor((e) => e.type === 'restored', 120_000, 'the first start');
  const rss: number[] = [];
  const sampler = setInterval(() => {
    const m = memoryOf(first.pid);
    if (m) rss.push(m.rssMb);
  }, 500);
  const loadStarted = Date.now();
  await caughtUp(1_800_000);
  const loadMs = Date.now() - loadStarted;
  log(`${keys} keys counted in ${(loadMs / 1000).toFixed(1)} s`);

  const random = prng(7);
  const updated = new Map<string, number>();
  const updateRecords = Array.from({ length: updates }, () => {
    const key = `key-${Math.floor(random() * keys)}`;
    updated.set(key, (updated.get(key) ?? 0) + 1);
    return { key, value };
  });
  let fed = 0;
  const feeding = (async () => {
    for (let from = 0; from < updates; from += 5_000) {
      await produceAll(bootstrap!, names.input, updateRecords.slice(from, from + 5_000));
      fed = from + 5_000;
      await sleep(50);
    }
  })();
  // Killed once about half the updates are in, a little later: mid-stream, with transactions open and checkpoints running.
  while (fed < updates / 2) await sleep(100);
  await sleep(2_000);
  const beforeKill = memoryOf(first.pid);
  clearInterval(sampler);
  log('SIGKILL');
  first.kill('SIGKILL');
  await first.exit();
  await feeding;

  const changelogEnds = await withAdmin(bootstrap, async (admin) => {
    const topics = (await admin.listTopics()).filter((t: string) => t.startsWith(names.appId) && t.endsWith('-changelog'));
    let total = 0;
    for (const t of topics) for (const end of (await endOffsets(admin, t)).values()) total += end;
    return total;
  });
  const second = start('second');
  const restored = await second.waitFor((e) => e.type === 'restored', 1_800_000, 'the restore after the SIGKILL');
  log(`restored ${restored.records} changelog records in ${restored.ms} ms (${restored.fromCheckpoint} partitions from a checkpoint)`);
  await caughtUp(1_800_000);
  const afterRestart = memoryOf(second.pid);
  await second.stop();

  log('checking every key');
  const last = new Map<string, number>();
  for (const r of (await readTopic(bootstrap, names.output)).sort((a, b) => a.partition - b.partition || a.offset - b.offset)) last.set(r.key!.toString(), Number(r.value!.toString()));
  let mismatches = 0;
  for (let i = 0; i < keys; i++) {
    const key = `key-${i}`;
    if (last.get(key) !== 1 + (updated.get(key) ?? 0)) mismatches++;
  }
  const result = {
    date: new Date().toISOString(),
    command: `npm run bench:large-state -- --keys ${keys} --updates ${updates}`,
    keys,
    updates,
    partitions,
    loadSeconds: loadMs / 1000,
    peakRssMbDuringLoad: Math.max(...rss),
    rssMbBeforeKill: beforeKill?.rssMb,
    peakRssMbAfterRestart: afterRestart?.peakMb,
    changelogRecordsAtRestart: changelogEnds,
    restoredRecords: Number(restored.records),
    restoreMs: Number(restored.ms),
    partitionsFromCheckpoint: Number(restored.fromCheckpoint),
    keysChecked: keys,
    mismatches,
  };
  console.log(JSON.stringify(result, null, 2));
  mkdirSync(join('bench', 'results'), { recursive: true });
  writeFileSync(join('bench', 'results', `large-state-${result.date.slice(0, 10)}.json`), `${JSON.stringify(result, null, 2)}\n`);
  if (flags.json) writeFileSync(flags.json, `${JSON.stringify(result, null, 2)}\n`);
} finally {
  await Promise.all(workers.map((w) => w.stop().catch(() => undefined)));
  if (ownBroker) await stopLocalCluster(join(workDir, 'cluster'));
  rmSync(workDir, { recursive: true, force: true });
}
