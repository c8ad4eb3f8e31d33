/**
 * npm run bench:profile -- [--pipeline word-count-8x1000] [--records N] [--bootstrap host:port]
 *                          [--guarantee exactly_once|at_least_once] [--json <file>]
 *
 * Where one onceflow worker's time goes on one benchmark pipeline: runs the worker on a fresh backlog
 * under V8's sampling profiler (`--cpu-prof`), waits until the group has committed the whole input,
 * stops it, and splits the main thread's samples into categories (stage code, serdes, store, record
 * path and headers, the Kafka client's JS and native calls, GC, idle). librdkafka's own threads are
 * not in the profile: the process CPU (all threads) is printed beside it.
 */
import { spawn } from 'node:child_process';
import { createWriteStream, mkdirSync, openSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { parseArgs } from 'node:util';
import { stopLocalCluster } from '../src/kafka/local-cluster.ts';
import { ensureTopics, withAdmin } from '../src/kafka/admin.ts';
import { produceAll } from '../src/verify/orders-input.ts';
import { GroupOffsets } from '../src/kafka/group-offsets.ts';
import { loadTopology } from '../src/dsl/load.ts';
import { compile } from '../src/graph/compile.ts';
import { startBenchBroker } from './lib/broker.ts';
import { endOffsets, groupProgress, sampleProc } from './lib/measure.ts';
import { PIPELINES, onceflowTopologyFile, topicEnv, type BenchPipeline } from './lib/contenders.ts';
import { inputFor } from './lib/models.ts';

const { values: flags } = parseArgs({
  options: {
    pipeline: { type: 'string', default: 'word-count-8x1000' },
    records: { type: 'string' },
    bootstrap: { type: 'string' },
    guarantee: { type: 'string', default: 'exactly_once' },
    json: { type: 'string' },
  },
});

const pipeline = flags.pipeline as BenchPipeline;
if (!PIPELINES.includes(pipeline)) throw new Error(`unknown pipeline ${pipeline} (one of ${PIPELINES.join(', ')})`);
const DEFAULT_RECORDS: Record<BenchPipeline, number> = { 'filter-map': 300_000, 'word-count': 50_000, orders: 70_000, 'word-count-8x1000': 40_000, 'customer-sum': 200_000 };
const records = Number(flags.records ?? DEFAULT_RECORDS[pipeline]);
const log = (s: string) => process.stderr.write(`[profile] ${s}\n`);

const tag = Date.now().toString(36);
const dir = join('bench', 'results', 'tmp', `profile-${tag}`);
mkdirSync(dir, { recursive: true });
let clusterDir: string | undefined;
let bootstrap = flags.bootstrap;
if (!bootstrap) {
  clusterDir = join(dir, 'cluster');
  bootstrap = startBenchBroker(clusterDir);
}
const BOOT = bootstrap;

try {
  const input = `profile-${tag}-${pipeline}-in`;
  const output = `profile-${tag}-${pipeline}-out`;
  const appId = `profile-${tag}-${pipeline}`;
  await withAdmin(BOOT, (a) => ensureTopics(a, [{ name: input, partitions: 6 }, { name: output, partitions: 6 }]));
  await produceAll(BOOT, input, inputFor(pipeline, records, 42));
  log(`${records} records in ${input}`);
  const builder = await loadTopology(onceflowTopologyFile(pipeline));
  const repartition = compile(builder, { appId }).topics.filter((t) => t.kind === 'repartition').map((t) => t.name);

  const child = spawn(
    process.execPath,
    [
      '--cpu-prof', '--cpu-prof-dir', dir, '--cpu-prof-interval', '200', '--max-semi-space-size=64',
      '--import', 'tsx', 'src/cli/main.ts', 'run', onceflowTopologyFile(pipeline),
      '--app-id', appId, '--instance-id', 'profile', '--guarantee', flags.guarantee!, '--commit-interval-ms', '100', '--no-typecheck', '--events',
    ],
    { env: { ...process.env, ONCEFLOW_BOOTSTRAP: BOOT, ...topicEnv(pipeline, input, output) }, stdio: ['ignore', 'pipe', openSync(join(dir, 'worker.log'), 'w')] },
  );
  // The worker's commit events: how much of the wall time the loop spent committing (waiting on the broker).
  const commits = { count: 0, ms: 0, records: 0 };
  let pending = '';
  const clientLog = createWriteStream(join(dir, 'worker-stdout.log'));
  if (!child.stdout) throw new Error('the worker has no stdout pipe');
  child.stdout.on('data', (chunk: Buffer) => {
    const lines = (pending + chunk.toString()).split('\n');
    pending = lines.pop() ?? '';
    for (const line of lines) {
      // With ONCEFLOW_KAFKA_DEBUG set the client's log objects share stdout: keep them apart for reading.
      if (!line.startsWith('{"')) {
        clientLog.write(`${line}\n`);
        continue;
      }
      const e = JSON.parse(line) as { type?: string; ms?: number; records?: number };
      if (e.type !== 'committed') continue;
      commits.count++;
      commits.ms += e.ms ?? 0;
      commits.records += e.records ?? 0;
    }
  });
  const startedAt = Date.now();
  const group = new GroupOffsets(BOOT, appId);
  let doneAt: number | undefined;
  let cpuAtDone: number | undefined;
  await withAdmin(BOOT, async (a) => {
    const ends = await endOffsets(a, input);
    while (Date.now() - startedAt < 600_000) {
      const progress = await groupProgress(a, group, input, ends, repartition).catch(() => undefined);
      if (progress?.done) {
        doneAt = Date.now();
        cpuAtDone = sampleProc(child.pid!)?.cpuSeconds;
        break;
      }
      await sleep(100);
    }
  });
  await group.close();
  child.kill('SIGTERM');
  await new Promise<void>((resolve) => child.on('exit', () => resolve()));
  if (doneAt === undefined) throw new Error('the worker did not commit the whole input within 600 s');
  // One profile per thread, named CPU.<date>.<time>.<pid>.<thread id>.<n>.cpuprofile: thread 0 is the main
  // thread, another the processing thread (docs/operations.md#the-processing-thread).
  const profiles = readdirSync(dir).filter((f) => f.endsWith('.cpuprofile'));
  const threadOf = (f: string) => Number(f.split('.').at(-3));
  const file = profiles.find((f) => threadOf(f) === 0);
  if (!file) throw new Error(`no main-thread .cpuprofile in ${dir}`);
  const split = categorize(JSON.parse(readFileSync(join(dir, file), 'utf8')) as CpuProfile);
  // Other threads are the processing thread and the module loader's (tsx's hooks): the busiest is the former.
  const busy = (split: ReturnType<typeof categorize>) => Object.entries(split.byCategory).reduce((n, [k, v]) => (k === 'idle' ? n : n + v), 0);
  const helpers = profiles.filter((f) => threadOf(f) !== 0).map((f) => ({ file: f, split: categorize(JSON.parse(readFileSync(join(dir, f), 'utf8')) as CpuProfile) }));
  const busiest = helpers.sort((a, b) => busy(b.split) - busy(a.split))[0];
  const helper = busiest?.file;
  const helperSplit = busiest?.split;
  const report = {
    pipeline,
    guarantee: flags.guarantee,
    records,
    wallSeconds: (doneAt - startedAt) / 1000,
    processCpuSeconds: cpuAtDone,
    processCpuMicrosPerRecord: cpuAtDone === undefined ? undefined : (cpuAtDone * 1e6) / records,
    commits: { ...commits, meanMs: commits.count ? round(commits.ms / commits.count) : undefined, meanRecords: commits.count ? Math.round(commits.records / commits.count) : undefined },
    mainThreadMicrosPerRecord: Object.fromEntries(Object.entries(split.byCategory).map(([k, v]) => [k, round((v * 1000) / records)])),
    topFunctions: split.top,
    profile: join(dir, file),
    ...(helperSplit === undefined
      ? {}
      : { processingThreadMicrosPerRecord: Object.fromEntries(Object.entries(helperSplit.byCategory).map(([k, v]) => [k, round((v * 1000) / records)])), processingThreadProfile: join(dir, helper!) }),
  };
  const text = [
    `${pipeline} (${flags.guarantee}), ${records} records; wall ${report.wallSeconds.toFixed(1)} s incl. start-up; process CPU ${cpuAtDone?.toFixed(1)} s = ${report.processCpuMicrosPerRecord?.toFixed(1)} µs/record`,
    `commits: ${commits.count}, ${(commits.ms / 1000).toFixed(1)} s in commit calls (mean ${report.commits.meanMs} ms, ${report.commits.meanRecords} records read per transaction)`,
    'main thread, µs per input record:',
    ...Object.entries(report.mainThreadMicrosPerRecord).sort((a, b) => b[1] - a[1]).map(([k, v]) => `  ${k.padEnd(22)} ${v.toFixed(1)}`),
    'top self-time functions (ms):',
    ...split.top.slice(0, 25).map((t) => `  ${t.ms.toFixed(0).padStart(7)}  ${t.category.padEnd(18)} ${t.name}`),
    ...(report.processingThreadMicrosPerRecord === undefined
      ? ['processing thread: not used']
      : [
          'processing thread, µs per input record:',
          ...Object.entries(report.processingThreadMicrosPerRecord).sort((a, b) => b[1] - a[1]).map(([k, v]) => `  ${k.padEnd(22)} ${v.toFixed(1)}`),
          'processing thread, top self-time functions (ms):',
          ...helperSplit!.top.slice(0, 12).map((t) => `  ${t.ms.toFixed(0).padStart(7)}  ${t.category.padEnd(18)} ${t.name}`),
        ]),
  ].join('\n');
  process.stdout.write(`${text}\n`);
  if (flags.json) writeFileSync(flags.json, `${JSON.stringify(report, null, 2)}\n`);
} finally {
  if (clusterDir) await stopLocalCluster(clusterDir);
}

interface CpuProfile {
  nodes: { id: number; callFrame: { functionName: string; url: string; lineNumber: number }; children?: number[] }[];
  samples: number[];
  timeDeltas: number[];
}

function round(x: number): number {
  return Math.round(x * 10) / 10;
}

/** The category of a function by where it is defined; the order of the tests matters (first match wins). */
function categoryOf(functionName: string, url: string): string {
  if (functionName === '(garbage collector)') return 'gc';
  if (functionName === '(idle)') return 'idle';
  if (functionName === '(program)') return 'native (program)';
  if (url.includes('kafka-javascript')) return 'kafka client';
  if (url.includes('/src/serdes/') || (url === '' && (functionName === 'parse' || functionName === 'stringify'))) return 'serdes';
  if (url.includes('/src/state/') || url.includes('record-cache')) return 'store';
  if (url.includes('record-collector') || url.includes('/src/core/')) return 'record path';
  if (url.includes('/processors/') || url.includes('/topology/') || url.includes('/bench/topologies/')) return 'stage code';
  if (url.includes('/src/runtime/')) return 'runtime';
  if (url.startsWith('node:') || url === '') return 'node / builtins';
  return 'other';
}

function categorize(profile: CpuProfile): { byCategory: Record<string, number>; top: { name: string; category: string; ms: number }[] } {
  const byId = new Map(profile.nodes.map((n) => [n.id, n]));
  const selfUs = new Map<number, number>();
  for (let i = 0; i < profile.samples.length; i++) selfUs.set(profile.samples[i]!, (selfUs.get(profile.samples[i]!) ?? 0) + (profile.timeDeltas[i] ?? 0));
  const byCategory: Record<string, number> = {};
  const byFunction = new Map<string, { category: string; us: number }>();
  for (const [id, us] of selfUs) {
    const frame = byId.get(id)!.callFrame;
    const category = categoryOf(frame.functionName, frame.url);
    byCategory[category] = (byCategory[category] ?? 0) + us / 1000;
    const name = `${frame.functionName || '(anonymous)'} ${frame.url.replace(/^.*\/(src|node_modules|bench|processors)\//, '$1/')}:${frame.lineNumber + 1}`;
    const entry = byFunction.get(name) ?? { category, us: 0 };
    entry.us += us;
    byFunction.set(name, entry);
  }
  const top = [...byFunction].map(([name, e]) => ({ name, category: e.category, ms: e.us / 1000 })).sort((a, b) => b.ms - a.ms);
  return { byCategory, top };
}
