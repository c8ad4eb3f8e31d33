/**
 * npm run bench -- [--records N] [--json <file>] [--pipelines a,b,c] [--quick] [--bootstrap host:port]
 *                  [--contenders a,b] [--rounds N] [--no-sweep] [--probe-rate N] [--probe-seconds N] [--label name]
 *
 * onceflow exactly_once and at_least_once, Kafka Streams exactly_once_v2 and a bare copy loop, each
 * as its own process, on the same backlog, in turn and alternating (A B C D A B C D) so drift of the
 * machine (page cache, broker log size, thermal) is spread over all contenders. See bench/README.md
 * for the method behind each figure.
 */
import { spawn, spawnSync } from 'node:child_process';
import { cpus, release, totalmem } from 'node:os';
import { createWriteStream, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { parseArgs } from 'node:util';
import { stopLocalCluster } from '../src/kafka/local-cluster.ts';
import { startBenchBroker } from './lib/broker.ts';
import { ensureTopics, withAdmin, type AdminClient, type TopicSpec } from '../src/kafka/admin.ts';
import { connectProducer, disconnect, flush } from '../src/kafka/clients.ts';
import { produceAll } from '../src/verify/orders-input.ts';
import { verify, lastByKey, type VerifyReport } from '../src/verify/verify.ts';
import { readTopic } from '../src/kafka/read-topic.ts';
import { loadTopology } from '../src/dsl/load.ts';
import { compile } from '../src/graph/compile.ts';
import type { TopologyBuilder } from '../src/dsl/topology-builder.ts';
import { OutputReader, endOffsets, groupProgress, percentile, ProcessTree, type ProcSample } from './lib/measure.ts';
import { GroupOffsets } from '../src/kafka/group-offsets.ts';
import { CONTENDERS, DEFAULT_CONTENDERS, PIPELINES, ensureKafkaStreamsPeer, factsOf, launchSpec, onceflowTopologyFile, runsOnceflow, type BenchPipeline, type ContenderName } from './lib/contenders.ts';
import { inputFor, modelFor, probeRecord } from './lib/models.ts';
import { compareFinals, finalsKey } from './lib/agreement.ts';
import { startTraceReceiver, TRACING_CONTENDERS, TRACING_PIPELINES } from './lib/tracing.ts';
import { summarize, renderTable, renderSvg, updateReadme, type RunResult, type BenchResults } from './lib/report.ts';

const { values: flags } = parseArgs({
  options: {
    records: { type: 'string' },
    json: { type: 'string' },
    pipelines: { type: 'string' },
    contenders: { type: 'string' },
    quick: { type: 'boolean', default: false },
    bootstrap: { type: 'string' },
    rounds: { type: 'string' },
    'no-sweep': { type: 'boolean', default: false },
    'probe-rate': { type: 'string' },
    'probe-seconds': { type: 'string' },
    'run-timeout-s': { type: 'string' },
    'sweep-pipelines': { type: 'string' },
    baseline: { type: 'string' },
    label: { type: 'string' },
    tracing: { type: 'boolean', default: false },
  },
  allowPositionals: false,
});

const log = (s: string) => process.stderr.write(`[bench ${new Date().toISOString().slice(11, 19)}] ${s}\n`);

/**
 * Backlog sizes that keep onceflow exactly_once, the slowest contender, busy for 20 s or more on the
 * 2-core machine they were sized on (filter-map ≈ 20k rec/s, word-count ≈ 300 lines/s = ~2k words/s
 * through the repartition, orders ≈ 500 rec/s); faster contenders finish the same input sooner, so
 * their figures rest on shorter windows.
 */
// Sized so that an onceflow EOS run of each pipeline lasts about 20 s here (2 cores, one local broker).
const DEFAULT_RECORDS: Record<BenchPipeline, number> = { 'filter-map': 600_000, 'word-count': 50_000, orders: 70_000, 'word-count-8x1000': 100_000, 'customer-sum': 300_000 };
const QUICK_RECORDS: Record<BenchPipeline, number> = { 'filter-map': 20_000, 'word-count': 1_500, orders: 4_000, 'word-count-8x1000': 3_000, 'customer-sum': 10_000 };

const quick = flags.quick ?? false;
const pipelinesToRun = (flags.pipelines?.split(',').map((s) => s.trim()).filter(Boolean) ?? [...(flags.tracing ? TRACING_PIPELINES : PIPELINES)]) as BenchPipeline[];
for (const p of pipelinesToRun) if (!PIPELINES.includes(p)) throw new Error(`unknown pipeline ${p} (one of ${PIPELINES.join(', ')})`);
if (flags.baseline !== undefined) process.env.ONCEFLOW_BENCH_BASELINE = resolve(flags.baseline);
const defaultContenders: readonly ContenderName[] = flags.baseline !== undefined ? ['onceflow-eos', 'baseline-eos'] : flags.tracing ? TRACING_CONTENDERS : DEFAULT_CONTENDERS;
let contenders = (flags.contenders?.split(',').map((s) => s.trim()).filter(Boolean) ?? [...defaultContenders]) as ContenderName[];
for (const c of contenders) if (!CONTENDERS.includes(c)) throw new Error(`unknown contender ${c} (one of ${CONTENDERS.join(', ')})`);
const rounds = Number(flags.rounds ?? 2);
const sweep = !(flags['no-sweep'] ?? false);
const probeRate = Number(flags['probe-rate'] ?? 200);
const probeSeconds = Number(flags['probe-seconds'] ?? (quick ? 4 : 10));
const runTimeoutMs = Number(flags['run-timeout-s'] ?? 900) * 1000;
// --records N for every pipeline, or per pipeline: --records filter-map=150000,orders=6000
const recordsFlag = new Map((flags.records ?? '').split(',').filter((x) => x.includes('=')).map((x) => x.split('=') as [string, string]));
const recordsFor = (p: BenchPipeline) =>
  recordsFlag.has(p) ? Number(recordsFlag.get(p)) : flags.records && !flags.records.includes('=') ? Number(flags.records) : (quick ? QUICK_RECORDS : DEFAULT_RECORDS)[p];
const sweepPipelines = flags['sweep-pipelines']?.split(',') ?? undefined;
const PARTITIONS = 6;
const SWEEP_MS = [10, 100, 1000];

const tag = `${Date.now().toString(36)}`;
// An A/B against a baseline checkout is not the day's standing against the peers: its own files, and the README's table stays.
const suffix = [flags.label, flags.baseline !== undefined ? 'baseline' : undefined, flags.tracing ? 'tracing' : undefined, quick ? 'quick' : undefined].filter(Boolean).map((s) => `-${s}`).join('');
const jsonFile = join('bench', 'results', `${new Date().toISOString().slice(0, 10)}${suffix}.json`);
const tmpDir = join('bench', 'results', 'tmp', tag);
mkdirSync(tmpDir, { recursive: true });
if (flags.tracing) await startTraceReceiver();

let clusterDir: string | undefined;
let bootstrap = flags.bootstrap;
const children = new Set<number>();
let interrupted = false;
process.on('SIGINT', () => {
  interrupted = true;
  for (const pid of children) {
    try {
      process.kill(pid, 'SIGTERM');
    } catch {
      /* gone */
    }
  }
});

const isKafkaStreams = (c: ContenderName) => factsOf(c).kind === 'kafka-streams';
if (contenders.some(isKafkaStreams)) {
  const why = ensureKafkaStreamsPeer(log);
  if (why) {
    log(`Kafka Streams contenders skipped: ${why}`);
    contenders = contenders.filter((c) => !isKafkaStreams(c));
  }
}

if (!bootstrap) {
  clusterDir = join(tmpDir, 'cluster');
  log(`starting a local broker in ${clusterDir}`);
  bootstrap = startBenchBroker(clusterDir);
}
const BOOT = bootstrap;
log(`broker ${BOOT}`);

const results: RunResult[] = [];
let warmedUp = false;
const verifyNotes: string[] = [];
/** Last value per key of each aggregate run's output, for comparing the contenders with onceflow EOS. */
const finals = new Map<string, Map<string, string>>();
let runCounter = 0;

try {
  for (const pipeline of pipelinesToRun) {
    if (interrupted) break;
    const builder = await loadTopology(onceflowTopologyFile(pipeline)).catch((e: unknown) => {
      log(`${pipeline}: onceflow topology not loadable (${(e as Error).message}); onceflow contenders skipped`);
      return undefined;
    });
    const records = recordsFor(pipeline);
    const input = `bench-${tag}-${pipeline}-in`;
    await withAdmin(BOOT, (a) => ensureTopics(a, [{ name: input, partitions: PARTITIONS }]));
    const data = inputFor(pipeline, records, 42);
    const bytes = data.reduce((n, r) => n + r.value.length + r.key.length, 0);
    log(`${pipeline}: producing ${records} records (${Math.round(bytes / records)} bytes avg) to ${input}`);
    const t0 = Date.now();
    await produceAll(BOOT, input, data);
    log(`${pipeline}: produced in ${((Date.now() - t0) / 1000).toFixed(1)} s`);

    const plan: { contender: ContenderName; round: number; commitMs: number; sweep: boolean }[] = [];
    for (let round = 1; round <= rounds; round++) for (const c of contenders) plan.push({ contender: c, round, commitMs: 100, sweep: false });
    if (sweep && contenders.includes('onceflow-eos') && (!sweepPipelines || sweepPipelines.includes(pipeline))) for (const ms of SWEEP_MS) if (ms !== 100) plan.push({ contender: 'onceflow-eos', round: 1, commitMs: ms, sweep: true });

    // One untimed run before the first measured one: a fresh broker creates __consumer_offsets and
    // __transaction_state (50 partitions each) on first use and warms its JIT under the first heavy
    // fetches, which made whichever contender ran first 1.5-2x slower than in its second round.
    const first = plan[0];
    if (!warmedUp && first !== undefined && !(runsOnceflow(first.contender) && !builder)) {
      warmedUp = true;
      const warm = await runOne({ ...first, pipeline, input, appId: `bench-${tag}-${pipeline}-warm-up`, run: ++runCounter, builder });
      log(`${pipeline} ${first.contender}: warm-up run, not counted: ${fmt(warm.throughput)} rec/s`);
    }

    for (const step of plan) {
      if (interrupted) break;
      if (runsOnceflow(step.contender) && !builder) continue;
      const run = ++runCounter;
      const appId = `bench-${tag}-${pipeline}-${step.contender}-c${step.commitMs}-r${step.round}`;
      const result = await runOne({ pipeline, contender: step.contender, round: step.round, commitMs: step.commitMs, sweep: step.sweep, input, appId, run, builder });
      results.push(result);
      log(
        `${pipeline} ${step.contender} commit=${step.commitMs}ms r${step.round}: ${fmt(result.throughput)} rec/s, p50 ${fmt(result.p50Ms)} ms, p99 ${fmt(result.p99Ms)} ms, cpu ${fmt(result.cpuSeconds)} s, rss ${fmt(result.peakRssMb)} MB` +
          (result.verify ? `, verify ${result.verify.ok ? 'OK' : `FAILED (dup ${result.verify.duplicates}, lost ${result.verify.lost}, mismatches ${result.verify.aggregateMismatches})`}` : '') +
          (result.error ? `, ERROR ${result.error}` : ''),
      );
    }
    writeResults(true);
  }
} finally {
  if (clusterDir) {
    log('stopping the local broker');
    await stopLocalCluster(clusterDir);
  }
}

writeResults(false);

// ---------------------------------------------------------------------------------------------

/**
 * The JSON (and, at the end, the chart and the README's table) of the runs so far. Written after every
 * pipeline too (`partial: true`), so a long run cut short keeps what it measured.
 */
function writeResults(partial: boolean): void {
  // A run cut short (Ctrl-C) reports the pipelines it measured, not the ones it never reached.
  const measured = pipelinesToRun.filter((p) => results.some((r) => r.pipeline === p));
  const out: BenchResults = {
    date: new Date().toISOString(),
    quick,
    ...(partial ? { partial } : {}),
    command: `npm run bench -- ${process.argv.slice(2).join(' ')}`.trim(),
    machine: { cpus: cpus().length, cpuModel: cpus()[0]?.model ?? 'unknown', memGb: Math.round(totalmem() / 2 ** 30), kernel: release() },
    versions: versions(),
    settings: { partitions: PARTITIONS, rounds, probeRate, probeSeconds, records: Object.fromEntries(measured.map((p) => [p, recordsFor(p)])), commitIntervalMs: 100, sweepMs: SWEEP_MS, broker: clusterDir ? 'local single broker started by bench' : BOOT },
    ...summarize(results, measured),
    kafkaStreamsAgreement: compareFinals(results, finals, measured, rounds, contenders),
    verifyNotes,
    runs: results,
  };
  mkdirSync(join('bench', 'results'), { recursive: true });
  writeFileSync(jsonFile, `${JSON.stringify(out, null, 2)}\n`);
  if (partial) return;
  if (flags.json && flags.json !== jsonFile) writeFileSync(flags.json, `${JSON.stringify(out, null, 2)}\n`);
  const svgFile = jsonFile.replace(/\.json$/, '.svg');
  writeFileSync(svgFile, renderSvg(out));
  if (flags.baseline === undefined && !flags.tracing) updateReadme(join('bench', 'README.md'), out, jsonFile, svgFile);
  process.stdout.write(`${renderTable(out)}\n\nresults: ${jsonFile}\nchart:   ${svgFile}\n`);
}


function fmt(n: number | undefined): string {
  if (n === undefined || !Number.isFinite(n)) return '—';
  return n >= 100 ? String(Math.round(n)) : n.toFixed(n >= 10 ? 1 : 2);
}

function versions(): BenchResults['versions'] {
  const java = spawnSync('java', ['-version'], { encoding: 'utf8' }).stderr?.split('\n')[0] ?? 'unknown';
  const pkg = (path: string) => (JSON.parse(readFileSync(path, 'utf8')) as { version: string }).version;
  return {
    node: process.version,
    java,
    kafkaBroker: '4.1.1',
    kafkaStreams: '4.1.1',
    confluentKafkaJavascript: pkg('node_modules/@confluentinc/kafka-javascript/package.json'),
    onceflow: pkg('package.json'),
  };
}

interface RunOne {
  pipeline: BenchPipeline;
  contender: ContenderName;
  round: number;
  commitMs: number;
  sweep: boolean;
  input: string;
  appId: string;
  run: number;
  builder: TopologyBuilder | undefined;
}

async function runOne(o: RunOne): Promise<RunResult> {
  const output = `${o.appId}-out`;
  const base: Omit<RunResult, 'throughput'> = { pipeline: o.pipeline, contender: o.contender, round: o.round, commitIntervalMs: o.commitMs, sweep: o.sweep, appId: o.appId, inputRecords: 0 };

  return withAdmin(BOOT, async (a: AdminClient) => {
    // Created up front: the broker does not auto-create, and a copy loop or Kafka Streams would not either.
    await ensureTopics(a, [{ name: output, partitions: PARTITIONS }, ...internalTopics(o)]);
    await waitTopicsVisible(a, [output, ...internalTopics(o).map((t) => t.name)]);
    const ends = await endOffsets(a, o.input);
    const inputRecords = [...ends.values()].reduce((x, y) => x + y, 0);
    const reader = new OutputReader(BOOT, output, PARTITIONS);
    await reader.start();
    const group = new GroupOffsets(BOOT, o.appId);

    const spec = launchSpec(o.contender, { pipeline: o.pipeline, bootstrap: BOOT, input: o.input, output, appId: o.appId, commitIntervalMs: o.commitMs });
    const startedAt = Date.now();
    const child = spawn(spec.cmd, spec.args, { env: { ...process.env, ...spec.env }, stdio: ['ignore', 'pipe', 'pipe'], ...(spec.cwd === undefined ? {} : { cwd: spec.cwd }) });
    const pid = child.pid!;
    children.add(pid);
    const errLog = createWriteStream(join(tmpDir, `${o.appId}.err`));
    child.stderr.pipe(errLog);
    const events = { readyAt: undefined as number | undefined, committed: 0, committedRecords: 0, aborted: 0, firstCommitAt: undefined as number | undefined, lastCommitAt: undefined as number | undefined, errors: [] as string[] };
    let buf = '';
    const outLog = createWriteStream(join(tmpDir, `${o.appId}.out`));
    child.stdout.on('data', (d: Buffer) => {
      outLog.write(d);
      buf += d.toString();
      let nl: number;
      while ((nl = buf.indexOf('\n')) >= 0) {
        const line = buf.slice(0, nl);
        buf = buf.slice(nl + 1);
        try {
          const e = JSON.parse(line) as { type: string; at?: number; records?: number; reason?: string; message?: string; state?: string };
          // Ready = partitions assigned and state restored: onceflow `assigned`, Kafka Streams RUNNING,
          // the copy loop's first batch. Start-up before it is not part of throughput.
          if (e.type === 'assigned' || (e.type === 'state' && e.state === 'RUNNING') || e.type === 'ready') events.readyAt ??= e.at;
          if (e.type === 'committed') {
            events.committed++;
            events.committedRecords += e.records ?? 0;
            events.firstCommitAt ??= e.at;
            events.lastCommitAt = e.at;
          } else if (e.type === 'aborted' || e.type === 'fenced' || e.type === 'error') {
            events.aborted++;
            if (events.errors.length < 5) events.errors.push(`${e.type}: ${e.reason ?? e.message ?? ''}`);
          }
        } catch {
          /* not an event line */
        }
      }
    });
    let exited: number | null | undefined;
    const exit = new Promise<void>((res) => child.on('exit', (code) => ((exited = code), res())));

    // The whole tree: a contender's threads and any process it starts count against it.
    const tree = new ProcessTree(pid);
    let last: ProcSample | undefined;
    const sampler = setInterval(() => (last = tree.sample() ?? last), 200);
    let error: string | undefined;

    // Phase 1: the backlog. Throughput runs from the contender being ready to the poll of the group's
    // committed offsets that sees everything through (see groupProgress).
    let doneAt: number | undefined;
    let firstProgress: { at: number; committed: number } | undefined;
    while (!interrupted && exited === undefined) {
      const at = Date.now();
      const pr = await groupProgress(a, group, o.input, ends, repartitionTopics(o)).catch(() => ({ committed: 0, done: false, behind: -1 }));
      if (pr.committed > 0) firstProgress ??= { at, committed: pr.committed };
      outLog.write(`${JSON.stringify({ at, type: 'bench-progress', ...pr })}\n`);
      if (pr.done) {
        doneAt = at;
        break;
      }
      if (Date.now() - startedAt > runTimeoutMs) {
        error = `timed out after ${runTimeoutMs / 1000} s with ${pr.behind} records behind`;
        break;
      }
      await sleep(100);
    }
    if (exited !== undefined && doneAt === undefined) error = `exited with ${exited} before the end of the input`;
    // Offsets commit with (or, at least once, after) the outputs: wait for the reader to drain them.
    const drainUntil = Date.now() + 5000;
    while (reader.idleMs() < 500 && Date.now() < drainUntil) await sleep(100);
    const backlogSample = tree.sample() ?? last;
    const firstVisibleAt = reader.firstVisibleAt;
    const lastVisibleAt = reader.lastVisibleAt;
    const backlogOutputRecords = reader.records;

    // Phase 2: probes at a low, even rate into the same input, timed from their timestamp to visibility.
    let latencies: readonly number[] = [];
    let probeOutputs = 0;
    if (doneAt !== undefined && !error && !interrupted) {
      const producer = await connectProducer({ 'bootstrap.servers': BOOT, 'enable.idempotence': true, 'linger.ms': 0 });
      const from = Date.now();
      reader.latencyFrom = from;
      outLog.write(`${JSON.stringify({ at: from, type: 'bench-probes-start' })}\n`);
      const total = Math.round(probeRate * probeSeconds);
      for (let i = 0; i < total && !interrupted; i++) {
        const due = from + (i * 1000) / probeRate;
        const wait = due - Date.now();
        if (wait > 0) await sleep(wait);
        const r = probeRecord(o.pipeline, o.run, i);
        producer.produce(o.input, null, Buffer.from(r.value), r.key, Date.now());
      }
      await flush(producer, 10_000);
      await disconnect(producer);
      const probeEnds = await endOffsets(a, o.input);
      const until = Date.now() + 30_000;
      while (Date.now() < until && !interrupted) {
        const pr = await groupProgress(a, group, o.input, probeEnds, repartitionTopics(o)).catch(() => ({ committed: 0, done: false, behind: -1 }));
        if (pr.done) break;
        await sleep(100);
      }
      const drain = Date.now() + 5000;
      while (reader.idleMs() < 1000 && Date.now() < drain) await sleep(100);
      latencies = reader.latencySamples();
      probeOutputs = latencies.length;
    }

    const finalSample = tree.sample() ?? last;
    clearInterval(sampler);
    child.kill('SIGTERM');
    const killTimer = setTimeout(() => child.kill('SIGKILL'), 45_000);
    await exit;
    clearTimeout(killTimer);
    children.delete(pid);
    await reader.stop();
    await group.close();

    // Without a readiness event, the first poll that saw progress stands in (later than ready).
    const readyAt = events.readyAt ?? firstProgress?.at;
    const windowMs = firstVisibleAt !== undefined && lastVisibleAt !== undefined ? lastVisibleAt - firstVisibleAt : undefined;
    const result: RunResult = {
      ...base,
      inputRecords,
      throughput: doneAt !== undefined && readyAt !== undefined && doneAt > readyAt ? inputRecords / ((doneAt - readyAt) / 1000) : undefined,
      windowMs: doneAt !== undefined && readyAt !== undefined ? doneAt - readyAt : undefined,
      visibleThroughput: windowMs ? backlogOutputRecords / (windowMs / 1000) : undefined,
      visibleWindowMs: windowMs,
      startupMs: readyAt !== undefined ? readyAt - startedAt : undefined,
      backlogOutputRecords,
      commitEvents: events.committed,
      commitEventThroughput: events.firstCommitAt !== undefined && events.lastCommitAt !== undefined && events.lastCommitAt > events.firstCommitAt ? events.committedRecords / ((events.lastCommitAt - events.firstCommitAt) / 1000) : undefined,
      aborted: events.aborted,
      p50Ms: percentile(latencies, 50),
      p99Ms: percentile(latencies, 99),
      maxLatencyMs: percentile(latencies, 100),
      probeOutputs,
      cpuSeconds: backlogSample?.cpuSeconds,
      cpuSecondsTotal: finalSample?.cpuSeconds,
      cpuMicrosPerRecord: backlogSample && inputRecords ? (backlogSample.cpuSeconds * 1e6) / inputRecords : undefined,
      peakRssMb: finalSample?.peakRssMb,
      exitCode: exited ?? null,
      ...(error ? { error } : {}),
      ...(events.errors.length ? { events: events.errors } : {}),
    };

    if (!error && !interrupted) {
      if (runsOnceflow(o.contender)) result.verify = await verifyOnceflow(o, output).catch((e: unknown) => ((verifyNotes.push(`${o.appId}: verify failed to run: ${(e as Error).message}`), undefined)));
      if (o.pipeline !== 'filter-map' && !o.sweep && factsOf(o.contender).kind !== 'limit') {
        const recs = await readTopic(BOOT, output);
        finals.set(finalsKey(o.pipeline, o.contender, o.round), lastByKey(recs, (r) => ({ key: r.key?.toString() ?? '', value: String(JSON.parse(r.value?.toString() ?? 'null')) })));
      }
    }
    return result;
  });
}

/** The topics a contender repartitions through, named as each names them. */
function repartitionTopics(o: RunOne): string[] {
  if (isKafkaStreams(o.contender)) {
    // Peer.java: Grouped.with("counts"), Repartitioned.as("order-versions"), Grouped.with("customer-paid"), Grouped.with("customer-sum").
    const names: Record<BenchPipeline, string[]> = { 'filter-map': [], 'word-count': ['counts'], 'word-count-8x1000': ['counts'], orders: ['order-versions', 'customer-paid'], 'customer-sum': ['customer-sum'] };
    return names[o.pipeline].map((n) => `${o.appId}-${n}-repartition`);
  }
  if (factsOf(o.contender).kind === 'limit' || !o.builder) return [];
  return compile(o.builder, { appId: o.appId }).topics.filter((t) => t.kind === 'repartition').map((t) => t.name);
}

/**
 * onceflow's internal topics, created before the worker starts: the worker creates them itself too,
 * but right after creating them it can find them missing from metadata and exit (TOPIC_MISSING),
 * which would turn a benchmark run into a start-up race.
 */
function internalTopics(o: RunOne): TopicSpec[] {
  if (!o.builder || factsOf(o.contender).kind !== 'onceflow') return [];
  const compiled = compile(o.builder, { appId: o.appId });
  const counts = new Map(compiled.topics.filter((t) => t.kind === 'source' && !t.internal).map((t) => [t.name, PARTITIONS]));
  return compiled
    .resolvePartitions(counts)
    .topics.filter((t) => t.internal)
    .map((t) => ({ name: t.name, partitions: t.partitions ?? 1, compact: t.cleanupPolicy === 'compact' }));
}

async function waitTopicsVisible(a: AdminClient, names: readonly string[]): Promise<void> {
  const until = Date.now() + 15_000;
  while (Date.now() < until) {
    const have = new Set(await a.listTopics());
    if (names.every((n) => have.has(n))) {
      const meta = await a.fetchTopicMetadata({ topics: [...names] }).catch(() => []);
      if (meta.length === names.length && meta.every((m) => m.partitions.length > 0)) return;
    }
    await sleep(200);
  }
}

async function verifyOnceflow(o: RunOne, output: string): Promise<VerifyReport | undefined> {
  if (!o.builder) return undefined;
  const compiled = compile(o.builder, { appId: o.appId });
  const repartition = compiled.topics.filter((t) => t.kind === 'repartition').map((t) => t.name);
  const model = modelFor(o.pipeline);
  return verify({
    bootstrap: BOOT,
    inputTopic: o.input,
    lineageTopics: [...repartition, output],
    ...(model.expectedFinal ? { resultTopic: output } : {}),
    deadLetterTopic: compiled.deadLetterTopic,
    model,
  });
}

