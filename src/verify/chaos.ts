import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { ensureTopics, withAdmin } from '../kafka/admin.ts';
import { readClusterInfo, restartBroker, startLocalCluster, stopLocalCluster, type LocalClusterInfo } from '../kafka/local-cluster.ts';
import { projectRoot } from '../kafka/paths.ts';
import { compile } from '../graph/compile.ts';
import { loadTopology } from '../dsl/load.ts';
import { CHAOS_PHASES, type ChaosPhase } from '../runtime/faults.ts';
import { pipelines, type PipelineName } from './pipelines.ts';
import { prng, produceAll } from './orders-input.ts';
import { waitCaughtUp } from './progress.ts';
import { verify, type VerifyReport } from './verify.ts';
import { WorkerProcess } from './worker-process.ts';
import { avroOrders } from './avro-orders.ts';
import { OnceflowError } from '../errors.ts';

export interface ChaosOptions {
  readonly records: number;
  readonly replicas: number;
  readonly kills: number;
  readonly brokerRestarts?: number;
  /** Replacements started before the old process with the same instance id is stopped (rolling updates do this). */
  readonly overlappingRestarts?: number;
  /** Two live processes with one instance id: one must step back, and no record may be lost. */
  readonly duplicateInstances?: number;
  readonly scale?: boolean;
  readonly poison?: number;
  readonly seed?: number;
  readonly guarantee?: 'exactly_once' | 'at_least_once';
  readonly pipeline?: PipelineName;
  readonly partitions?: number;
  /** How long input keeps arriving: kills land while records flow. */
  readonly feedMs?: number;
  /** Use this broker instead of starting one (broker restarts then need `clusterDir`). */
  readonly bootstrap?: string;
  readonly clusterDir?: string;
  readonly log?: (line: string) => void;
  /** Test-only: workers commit offsets outside the transaction, which the verifier must catch. */
  readonly brokenWorker?: boolean;
  /** Place every kill in this transaction phase (default: every other kill in a random phase). */
  readonly phase?: ChaosPhase;
  /** orders only: `avro` feeds registry Avro and runs the workers with ONCEFLOW_ORDERS_FORMAT=avro (needs the registry). */
  readonly format?: 'json' | 'avro';
  /** The registry for `format: avro` when `bootstrap` is given; else the started cluster's. */
  readonly registryUrl?: string;
  /** The workers' cacheMaxRecords (default 0: every aggregate update goes downstream). */
  readonly cacheMaxRecords?: number;
  /** `persistent`: the workers keep their stores in LMDB (one state dir for the run) with running checkpoints every second. */
  readonly stateStore?: 'memory' | 'persistent';
}

export interface ChaosResult {
  readonly records: number;
  readonly replicas: number;
  readonly kills: number;
  readonly killPhases: Record<string, number>;
  readonly brokerRestarts: number;
  readonly overlappingRestarts: number;
  readonly duplicateInstances: number;
  /** Of the duplicate-instance processes: how many stopped with DUPLICATE_INSTANCE_ID (one per event is expected). */
  readonly steppedBack: number;
  readonly scaled: boolean;
  readonly guarantee: string;
  readonly format: 'json' | 'avro';
  readonly pipeline: string;
  readonly seed: number;
  readonly duplicates: number;
  readonly lost: number;
  readonly aggregateMismatches: number;
  readonly dlqRecords: number;
  readonly poisonInjected: number;
  readonly cacheMaxRecords: number;
  readonly stateStore: 'memory' | 'persistent';
  readonly abortedSeenByReadUncommitted: number;
  readonly durationMs: number;
  readonly ok: boolean;
  readonly verify: VerifyReport;
}

/**
 * Kafka Streams' EOS system test, as a product feature: replicas process a stream while they are
 * SIGKILLed (at random moments and inside each phase of a transaction), the broker restarts and
 * the group scales; then the verifier checks the committed output against the input.
 */
/** A chaos run asked for something that cannot run: the message names the option. */
export class ChaosConfigError extends OnceflowError {
  readonly code = 'CHAOS_CONFIG';
}

export async function runChaos(opts: ChaosOptions): Promise<ChaosResult> {
  const started = Date.now();
  const log = opts.log ?? (() => undefined);
  const seed = opts.seed ?? 42;
  const rand = prng(seed * 7919 + 1);
  const pipeline = pipelines[opts.pipeline ?? 'orders'];
  const guarantee = opts.guarantee ?? 'exactly_once';
  const avro = opts.format === 'avro';
  if (avro && pipeline.name !== 'orders') throw new ChaosConfigError(`--format avro applies to the orders topology, not ${pipeline.name}`);
  let cluster: LocalClusterInfo | undefined;
  let ownCluster = false;
  if (opts.bootstrap) {
    cluster = opts.clusterDir ? readClusterInfo(opts.clusterDir) : undefined;
  } else {
    cluster = await startLocalCluster({ dir: join(projectRoot(), '.onceflow', `chaos-${process.pid}`), withRegistry: avro });
    ownCluster = true;
    log(`local broker ${cluster.bootstrap} (answered after ${cluster.brokerStartMs} ms)`);
  }
  const bootstrap = opts.bootstrap ?? cluster!.bootstrap;
  const tag = `${seed}-${Date.now().toString(36)}`;
  const appId = `chaos-${pipeline.name}-${tag}`;
  const input = `chaos-in-${tag}`;
  const output = `chaos-out-${tag}`;
  const partitions = opts.partitions ?? 6;
  const workers: WorkerProcess[] = [];
  try {
    await withAdmin(bootstrap, (a) => ensureTopics(a, [{ name: input, partitions }, { name: output, partitions }]));
    const registryUrl = opts.registryUrl ?? (cluster?.registryUrl || undefined);
    if (avro && !registryUrl) throw new ChaosConfigError('--format avro needs a schema registry: give --registry-url with --bootstrap');
    const wire = avro ? await avroOrders(input, registryUrl!) : undefined;
    const plain = pipeline.input({ records: opts.records, seed, poison: opts.poison ?? 0 });
    const records = wire ? wire.encode(plain) : plain;
    const env = {
      ...pipeline.env(input, output),
      ONCEFLOW_BOOTSTRAP: bootstrap,
      ...(wire ? { ONCEFLOW_ORDERS_FORMAT: 'avro', ONCEFLOW_REGISTRY_URL: registryUrl! } : {}),
      ...(opts.brokenWorker ? { ONCEFLOW_UNSAFE_OFFSETS_OUTSIDE_TXN: '1' } : {}),
      ...(opts.cacheMaxRecords ? { ONCEFLOW_CACHE_MAX_RECORDS: String(opts.cacheMaxRecords) } : {}),
      ...(opts.stateStore === 'persistent'
        ? { ONCEFLOW_STATE_STORE: 'persistent', ONCEFLOW_STATE_DIR: mkdtempSync(join(tmpdir(), 'onceflow-chaos-state-')), ONCEFLOW_STATE_CHECKPOINT_INTERVAL_MS: '1000' }
        : {}),
    };
    const compiled = compile(await withEnv(env, () => loadTopology(pipeline.file)), { appId });
    const repartitionTopics = compiled.topics.filter((t) => t.kind === 'repartition').map((t) => t.name);
    const deadLetterTopic = compiled.deadLetterTopic;

    let nextInstance = 0;
    const spawnWorker = (instance: string, extraEnv: Record<string, string> = {}) => {
      const w = new WorkerProcess(instance, pipeline.file, ['--app-id', appId, '--instance-id', instance, '--guarantee', guarantee], { ...env, ...extraEnv });
      workers.push(w);
      return w;
    };
    const live = new Map<string, WorkerProcess>();
    for (let i = 0; i < opts.replicas; i++) {
      const id = `r${nextInstance++}`;
      live.set(id, spawnWorker(id));
    }
    await Promise.all([...live.values()].map((w) => w.waitFor((e) => e.type === 'started', 60_000, 'start')));

    // Feed the input in slices over feedMs so that kills hit workers that are busy.
    const feedMs = opts.feedMs ?? 20_000;
    const slices = 20;
    const feeding = (async () => {
      for (let s = 0; s < slices; s++) {
        const part = records.slice(Math.floor((s * records.length) / slices), Math.floor(((s + 1) * records.length) / slices));
        await produceAll(bootstrap, input, part);
        await sleep(feedMs / slices);
      }
    })();

    /** A live replica drawn at random, by its instance id. */
    const drawLive = (): [string, WorkerProcess] | undefined => {
      const ids = [...live.keys()];
      const id = ids[Math.floor(rand() * ids.length)];
      return id === undefined ? undefined : [id, live.get(id)!];
    };
    const killPhases: Record<string, number> = { random: 0, ...Object.fromEntries(CHAOS_PHASES.map((p) => [p, 0])) };
    const events: { at: number; run: () => Promise<void> }[] = [];
    // Kills are drawn at random times, so they are numbered as they happen, not as they were drawn.
    let killsDone = 0;
    for (let k = 0; k < opts.kills; k++) {
      events.push({
        at: rand() * feedMs,
        run: async () => {
          const drawn = drawLive();
          if (!drawn) return;
          const [victim, w] = drawn;
          // Every other kill is placed inside a transaction phase by the worker itself, on its restart.
          const phase = opts.phase ?? (k % 2 === 1 ? CHAOS_PHASES[Math.floor(rand() * CHAOS_PHASES.length)] : undefined);
          w.kill('SIGKILL');
          await w.exit();
          killPhases.random = (killPhases.random ?? 0) + 1;
          log(`kill ${++killsDone}/${opts.kills}: SIGKILL ${victim}${phase ? `, restarted to die again at ${phase}` : ''}`);
          let next = spawnWorker(victim, phase ? { ONCEFLOW_CHAOS_KILL_AT: `${phase}:${1 + Math.floor(rand() * 5)}` } : {});
          live.set(victim, next);
          if (phase) {
            const died = (await next.exitWithin(40_000)) !== undefined;
            if (died) {
              killPhases[phase] = (killPhases[phase] ?? 0) + 1;
              next = spawnWorker(victim);
              live.set(victim, next);
            } else {
              // It never reached that phase (no records for it): replace it with a plain replica.
              next.kill('SIGKILL');
              await next.exit();
              next = spawnWorker(victim);
              live.set(victim, next);
            }
          }
        },
      });
    }
    for (let b = 0; b < (opts.brokerRestarts ?? 0); b++) {
      events.push({
        at: rand() * feedMs,
        run: async () => {
          if (!cluster) throw new Error('broker restarts need the local cluster (no --bootstrap, or give its --cluster-dir)');
          log(`broker restart ${b + 1}`);
          cluster = await restartBroker(cluster, 'SIGKILL');
        },
      });
    }
    for (let r = 0; r < (opts.overlappingRestarts ?? 0); r++) {
      events.push({
        at: rand() * feedMs,
        run: async () => {
          const drawn = drawLive();
          if (!drawn) return;
          const [id, old] = drawn;
          const replacement = spawnWorker(id);
          const overlapMs = 500 + Math.floor(rand() * 2500);
          log(`overlapping restart ${r + 1}: new ${id} started, old one stopped ${overlapMs} ms later`);
          await sleep(overlapMs);
          await old.stop();
          live.set(id, replacement);
        },
      });
    }
    let steppedBack = 0;
    for (let d = 0; d < (opts.duplicateInstances ?? 0); d++) {
      events.push({
        at: rand() * feedMs,
        run: async () => {
          const drawn = drawLive();
          if (!drawn) return;
          const [id, victim] = drawn;
          let pair: WorkerProcess[];
          if (d % 2 === 0) {
            log(`duplicate instance ${d + 1}: a second ${id} started beside the live one`);
            pair = [victim, spawnWorker(id)];
          } else {
            // Both wait out the dead member, then start together: the race between two fresh producers.
            log(`duplicate instance ${d + 1}: ${id} SIGKILLed, two processes started in its place`);
            victim.kill('SIGKILL');
            await victim.exit();
            pair = [spawnWorker(id), spawnWorker(id)];
          }
          const [a, b] = pair as [WorkerProcess, WorkerProcess];
          const first = await Promise.race([a.exit().then(() => a), b.exit().then(() => b), sleep(90_000).then(() => undefined)]);
          if (first) {
            if (first.stderr.some((l) => l.includes('DUPLICATE_INSTANCE_ID'))) steppedBack++;
            live.set(id, first === a ? b : a);
          } else {
            log(`duplicate instance ${d + 1}: both ${id} processes still run after 90 s`);
            live.set(id, b);
          }
        },
      });
    }
    let scaled = false;
    if (opts.scale) {
      events.push({
        at: feedMs * 0.3,
        run: async () => {
          const id = `r${nextInstance++}`;
          log(`scale up: ${id}`);
          live.set(id, spawnWorker(id));
          scaled = true;
        },
      });
      events.push({
        at: feedMs * 0.7,
        run: async () => {
          const [id, w] = [...live.entries()][0]!;
          log(`scale down: SIGTERM ${id}`);
          live.delete(id);
          await w.stop();
        },
      });
    }
    events.sort((a, b) => a.at - b.at);
    const t0 = Date.now();
    for (const ev of events) {
      const wait = ev.at - (Date.now() - t0);
      if (wait > 0) await sleep(wait);
      await ev.run();
    }
    await feeding;
    log('input complete; waiting for the group to catch up');
    await waitCaughtUp({ bootstrap, groupId: appId, plainTopics: [input], transactionalTopics: repartitionTopics, timeoutMs: 300_000, stableMs: 4_000 });
    const report = await verify({
      bootstrap,
      inputTopic: input,
      lineageTopics: [...repartitionTopics, output],
      resultTopic: output,
      deadLetterTopic,
      model: wire ? wire.decoded(pipeline.model) : pipeline.model,
      countUncommitted: true,
    });
    const poisonInjected = opts.poison ?? 0;
    const result: ChaosResult = {
      records: report.inputRecords,
      replicas: opts.replicas,
      kills: opts.kills,
      killPhases,
      brokerRestarts: opts.brokerRestarts ?? 0,
      overlappingRestarts: opts.overlappingRestarts ?? 0,
      duplicateInstances: opts.duplicateInstances ?? 0,
      steppedBack,
      scaled,
      guarantee,
      pipeline: pipeline.name,
      format: avro ? 'avro' : 'json',
      seed,
      duplicates: report.duplicates,
      lost: report.lost,
      aggregateMismatches: report.aggregateMismatches,
      dlqRecords: report.dlqRecords,
      poisonInjected,
      cacheMaxRecords: opts.cacheMaxRecords ?? 0,
      stateStore: opts.stateStore ?? 'memory',
      abortedSeenByReadUncommitted: report.abortedSeenByReadUncommitted ?? 0,
      durationMs: Date.now() - started,
      ok: report.ok && report.dlqRecords === poisonInjected,
      verify: report,
    };
    return result;
  } finally {
    await Promise.all(workers.map((w) => w.stop(10_000)));
    if (ownCluster && cluster) await stopLocalCluster(cluster.dir);
  }
}

/** Topology files read their topic names from the environment; set it only while one loads. */
async function withEnv<T>(env: Record<string, string>, fn: () => Promise<T>): Promise<T> {
  const saved = Object.fromEntries(Object.keys(env).map((k) => [k, process.env[k]]));
  Object.assign(process.env, env);
  try {
    return await fn();
  } finally {
    for (const [k, v] of Object.entries(saved)) {
      if (v === undefined) delete process.env[k];
      else process.env[k] = v;
    }
  }
}
