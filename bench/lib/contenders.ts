import { spawnSync } from 'node:child_process';
import { existsSync, readFileSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { tracingEnv } from './tracing.ts';

/** What runs a contender: onceflow (this checkout or --baseline's), the Kafka Streams peer, or the copy loop. */
export type ContenderKind = 'onceflow' | 'baseline' | 'kafka-streams' | 'limit';

export interface ContenderFacts {
  readonly kind: ContenderKind;
  /** onceflow's --guarantee; Kafka Streams always runs exactly_once_v2. */
  readonly guarantee?: 'exactly_once' | 'at_least_once';
  /** onceflow's --threads or Kafka Streams' num.stream.threads; absent = the contender's default (onceflow: config `threads`, 1). */
  readonly threads?: number;
  /** onceflow with tracing on at this sampling ratio, exporting to the bench's in-process receiver (bench/lib/tracing.ts). */
  readonly tracing?: number;
}

/** The facts about every contender, in report order. */
export const CONTENDER_FACTS = {
  'onceflow-eos': { kind: 'onceflow', guarantee: 'exactly_once' },
  'onceflow-eos-2t': { kind: 'onceflow', guarantee: 'exactly_once', threads: 2 },
  'onceflow-eos-0t': { kind: 'onceflow', guarantee: 'exactly_once', threads: 0 },
  'baseline-eos': { kind: 'baseline', guarantee: 'exactly_once' },
  'onceflow-alos': { kind: 'onceflow', guarantee: 'at_least_once' },
  'kafka-streams-eos': { kind: 'kafka-streams' },
  'kafka-streams-eos-2t': { kind: 'kafka-streams', threads: 2 },
  limit: { kind: 'limit' },
  'onceflow-eos-trace1pct': { kind: 'onceflow', guarantee: 'exactly_once', tracing: 0.01 },
  'onceflow-eos-trace100pct': { kind: 'onceflow', guarantee: 'exactly_once', tracing: 1 },
} as const satisfies Record<string, ContenderFacts>;

export type ContenderName = keyof typeof CONTENDER_FACTS;
/** Every contender, in report order. */
export const CONTENDERS = Object.keys(CONTENDER_FACTS) as ContenderName[];
/** What runs without --contenders or --baseline. */
export const DEFAULT_CONTENDERS: readonly ContenderName[] = ['onceflow-eos', 'onceflow-eos-2t', 'onceflow-eos-0t', 'onceflow-alos', 'kafka-streams-eos', 'kafka-streams-eos-2t', 'limit'];

export const factsOf = (contender: ContenderName): ContenderFacts => CONTENDER_FACTS[contender];
/** onceflow runs (this checkout or the baseline): the ones the bench verifies. */
export const runsOnceflow = (contender: ContenderName): boolean => ['onceflow', 'baseline'].includes(factsOf(contender).kind);

/**
 * `baseline-eos` is onceflow EOS run from another checkout (--baseline DIR, kept here as
 * ONCEFLOW_BENCH_BASELINE): old main against new main, alternating on one broker.
 */
export function baselineDir(): string {
  const dir = process.env.ONCEFLOW_BENCH_BASELINE;
  if (dir === undefined || !existsSync(join(dir, 'src', 'cli', 'main.ts'))) throw new Error(`baseline-eos needs --baseline <checkout with src/cli/main.ts> (got ${dir ?? 'none'})`);
  return dir;
}

export type BenchPipeline = 'filter-map' | 'word-count' | 'orders' | 'word-count-8x1000' | 'customer-sum';
export const PIPELINES: readonly BenchPipeline[] = ['filter-map', 'word-count', 'orders', 'word-count-8x1000', 'customer-sum'];

/** Pipelines whose onceflow topology lives only in bench/topologies and reads ONCEFLOW_BENCH_INPUT/OUTPUT. */
const BENCH_ONLY: readonly BenchPipeline[] = ['word-count-8x1000', 'customer-sum'];

export interface LaunchSpec {
  readonly cmd: string;
  readonly args: string[];
  readonly env: Record<string, string>;
  /** The directory it runs in; the bench's own checkout when absent. */
  readonly cwd?: string;
}

export interface RunTarget {
  readonly pipeline: BenchPipeline;
  readonly bootstrap: string;
  readonly input: string;
  readonly output: string;
  readonly appId: string;
  readonly commitIntervalMs: number;
}

/**
 * Both onceflow and Kafka Streams delete consumed repartition records every 30 s by default; a run that
 * lasted longer lost them before verify could read their lineage (2026-12-07: 245k of 600k customer-sum
 * records reported lost, exactly in the runs that purged). An hour is longer than any run.
 */
export const NO_PURGE_MS = 3_600_000;

const root = (): string => process.cwd();
export const ksDir = (): string => join(root(), 'bench', 'peers', 'kafka-streams');
export const ksJar = (): string => join(ksDir(), 'target', 'kafka-streams-peer.jar');

/**
 * The topology file onceflow runs for a pipeline. The shared topology files are preferred once they
 * read the benchmark's topic variables; until then the wrappers in bench/topologies point them there.
 */
export function onceflowTopologyFile(pipeline: BenchPipeline): string {
  if (pipeline === 'filter-map') return 'bench/topologies/filter-map.ts';
  if (BENCH_ONLY.includes(pipeline)) return `bench/topologies/${pipeline}.ts`;
  const shared = join('topology', `${pipeline}.ts`);
  const envVar = pipeline === 'orders' ? 'ONCEFLOW_ORDERS_INPUT' : 'ONCEFLOW_WORDS_INPUT';
  if (existsSync(shared) && readFileSync(shared, 'utf8').includes(envVar)) return shared;
  return join('bench', 'topologies', `${pipeline}.ts`);
}

export function topicEnv(pipeline: BenchPipeline, input: string, output: string): Record<string, string> {
  switch (pipeline) {
    case 'filter-map':
      return { ONCEFLOW_FILTER_MAP_INPUT: input, ONCEFLOW_FILTER_MAP_OUTPUT: output };
    case 'word-count':
      return { ONCEFLOW_WORDS_INPUT: input, ONCEFLOW_WORDS_OUTPUT: output };
    case 'orders':
      return { ONCEFLOW_ORDERS_INPUT: input, ONCEFLOW_ORDERS_OUTPUT: output };
    case 'word-count-8x1000':
    case 'customer-sum':
      return { ONCEFLOW_BENCH_INPUT: input, ONCEFLOW_BENCH_OUTPUT: output };
  }
}

export function launchSpec(contender: ContenderName, t: RunTarget): LaunchSpec {
  const facts = factsOf(contender);
  const threads = facts.threads === undefined ? [] : [String(facts.threads)];
  switch (facts.kind) {
    case 'baseline':
      return { ...onceflowLaunch(facts, t), cwd: baselineDir() };
    case 'onceflow':
      return onceflowLaunch(facts, t);
    case 'kafka-streams':
      return {
        cmd: 'java',
        args: ['-Dorg.slf4j.simpleLogger.defaultLogLevel=warn', `-Donceflow.bench.purgeIntervalMs=${NO_PURGE_MS}`, '-jar', ksJar(), t.pipeline, t.bootstrap, t.input, t.output, t.appId, String(t.commitIntervalMs), ...threads],
        env: {},
      };
    case 'limit':
      return { cmd: process.execPath, args: ['--import', 'tsx', 'bench/peers/limit.ts', t.bootstrap, t.input, t.output, t.appId], env: {} };
  }
}

function onceflowLaunch(facts: ContenderFacts, t: RunTarget): LaunchSpec {
  return {
    // node itself, not npm/npx: the pid sampled for CPU and RSS must be the processor's.
    cmd: process.execPath,
    args: [
      // As the `onceflow` command runs it (bin/onceflow.js's shebang, the Docker image).
      '--max-semi-space-size=64',
      '--import', 'tsx', 'src/cli/main.ts', 'run', onceflowTopologyFile(t.pipeline),
      '--app-id', t.appId, '--instance-id', 'bench',
      '--guarantee', facts.guarantee ?? 'exactly_once',
      '--commit-interval-ms', String(t.commitIntervalMs), '--events',
      ...(facts.threads === undefined ? [] : ['--threads', String(facts.threads)]),
      // No purge within a run: verify reads every repartition record's lineage after it; the peer does the same.
      '--repartition-purge-interval-ms', String(NO_PURGE_MS),
      // The check's compiler would land in the sampled CPU and RSS; `npm run typecheck` covers these files.
      '--no-typecheck',
      // Both record caches at their defaults (10 MiB each: statestore.cache.max.bytes, cacheMaxBytes).
    ],
    env: { ONCEFLOW_BOOTSTRAP: t.bootstrap, ...topicEnv(t.pipeline, t.input, t.output), ...(facts.tracing === undefined ? {} : tracingEnv(facts.tracing)) },
  };
}

/** Builds the Kafka Streams peer jar on first use and after its source changed (Maven, from Central); returns why not if it cannot. */
export function ensureKafkaStreamsPeer(log: (s: string) => void): string | undefined {
  const source = join(ksDir(), 'src', 'main', 'java', 'onceflow', 'bench', 'Peer.java');
  if (existsSync(ksJar()) && statSync(ksJar()).mtimeMs >= statSync(source).mtimeMs) return undefined;
  log('building the Kafka Streams peer (mvn package, on first use and after Peer.java changed) ...');
  const r = spawnSync('mvn', ['-q', '-B', 'package', '-DskipTests'], { cwd: ksDir(), encoding: 'utf8', stdio: ['ignore', 'pipe', 'pipe'] });
  if (r.error || r.status !== 0 || !existsSync(ksJar())) {
    return `mvn package failed in ${ksDir()}: ${(r.error?.message ?? `${r.stdout}\n${r.stderr}`).slice(-2000)}`;
  }
  return undefined;
}
