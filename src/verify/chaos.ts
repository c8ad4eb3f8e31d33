import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { ensureTopics, withAdmin } from '../kafka/admin.ts';
import { restartBroker, startLocalCluster, stopLocalCluster } from '../kafka/local-cluster.ts';
import { readClusterInfo, type LocalClusterInfo } from '../kafka/cluster-info.ts';
import { BrokerCluster } from '../kafka/broker-cluster.ts';
import { readTopic } from '../kafka/read-topic.ts';
import { endMarkerVisibleMs, LiveOutputReader, type LiveOutputReport } from './live-output.ts';
import { projectRoot } from '../kafka/paths.ts';
import { compile } from '../graph/compile.ts';
import { loadTopology } from '../dsl/load.ts';
import { CHAOS_PHASES, type ChaosPhase } from '../runtime/base/faults.ts';
import { pipelines, type PipelineName } from './pipelines.ts';
import { prng, produceAll } from './orders-input.ts';
import { waitCaughtUp } from './progress.ts';
import { verify, type VerifyReport } from './verify.ts';
import { WorkerProcess } from './worker-process.ts';
import { PhaseTrigger } from './phase-trigger.ts';
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
  /** Replicas added at 30 % of the feed and removed again at 70 % (0: none): 1 replica with scale 2 runs 1 → 3 → 1. */
  readonly scale?: number;
  readonly poison?: number;
  readonly seed?: number;
  readonly guarantee?: 'exactly_once' | 'at_least_once';
  readonly pipeline?: PipelineName;
  readonly partitions?: number;
  /** How long input keeps arriving: kills land while records flow. */
  readonly feedMs?: number;
  /** The input is stamped this long before now (a backfill): every schedule runs on old event time. 0: now. */
  readonly eventTimeAgeMs?: number;
  /** The whole input is written before the first worker starts (an app deployed on topics that hold data); kills still land over feedMs. */
  readonly backlog?: boolean;
  /** Use this broker instead of starting one (broker restarts then need `clusterDir`). */
  readonly bootstrap?: string;
  readonly clusterDir?: string;
  readonly log?: (line: string) => void;
  /** Test-only: workers commit offsets outside the transaction, which the verifier must catch. */
  readonly brokenWorker?: boolean;
  /** Place every kill in this transaction phase (default: every other kill in a random phase). */
  readonly phase?: ChaosPhase;
  /**
   * With `phase`: a kill is only the death at that phase. At the kill's moment the replica is armed
   * (phase-trigger.ts) and SIGKILLs itself at its next pass of the phase in a transaction that wrote
   * output, so no kill lands at a random point or where its replay could show nothing downstream.
   * Without it, each kill is a SIGKILL at a random moment and then, on the restart, the death at `phase`.
   */
  readonly onlyAtPhase?: boolean;
  /** orders only: `avro` feeds registry Avro and runs the workers with ONCEFLOW_ORDERS_FORMAT=avro (needs the registry). */
  readonly format?: 'json' | 'avro';
  /** The registry for `format: avro` when `bootstrap` is given; else the started cluster's. */
  readonly registryUrl?: string;
  /** The workers' cacheMaxRecords: 0 turns the record cache off (every aggregate update goes downstream); unset, the workers' default (bounded by bytes only). */
  readonly cacheMaxRecords?: number;
  /** `persistent`: the workers keep their stores in LMDB (one state dir for the run) with running checkpoints every second. */
  readonly stateStore?: 'memory' | 'persistent';
  /** 3: a three-node cluster (replication 3, min ISR 2) with a fault proxy in front of each node. Default 1. */
  readonly brokers?: number;
  /** A running multi-broker cluster with proxies (tests share one between runs); else one is started when brokers > 1. */
  readonly cluster?: BrokerCluster;
  /** kill -9 and restart of a node, chosen in turn: a worker's transaction coordinator, the group coordinator, an output partition's leader. */
  readonly brokerKills?: number;
  /** What the broker kills aim at, in turn (default: BROKER_KILL_TARGETS). */
  readonly brokerKillOrder?: readonly BrokerKillTarget[];
  /** Stalls of every connection of one worker at the proxies: alternately shorter and longer than the session timeout. */
  readonly stalls?: number;
}

/** The three kinds of node a broker kill aims at, in turn. */
export const BROKER_KILL_TARGETS = ['transaction-coordinator', 'group-coordinator', 'partition-leader'] as const;
export type BrokerKillTarget = (typeof BROKER_KILL_TARGETS)[number];

/** The workers' default session timeout (runtime/config.ts): a long stall outlasts it, a short one does not. */
const SESSION_TIMEOUT_MS = 10_000;

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
  /** The most replicas that ran at once (scaling included). */
  readonly peakReplicas: number;
  readonly guarantee: string;
  readonly format: 'json' | 'avro';
  readonly eventTimeAgeMs: number;
  readonly pipeline: string;
  /** The run's result topic; `verify.duplicatesByTopic` counts it apart from the intermediate topics. */
  readonly outputTopic: string;
  readonly seed: number;
  readonly duplicates: number;
  readonly lost: number;
  readonly aggregateMismatches: number;
  readonly dlqRecords: number;
  readonly poisonInjected: number;
  /** null: the workers' default. */
  readonly cacheMaxRecords: number | null;
  readonly stateStore: 'memory' | 'persistent';
  readonly abortedSeenByReadUncommitted: number;
  readonly brokers: number;
  readonly brokerKills: number;
  /** Per kill: what it aimed at and which node that was. */
  readonly brokerKillTargets: readonly { readonly target: BrokerKillTarget; readonly nodeId: number }[];
  readonly stalls: number;
  readonly stallsBeyondSessionTimeout: number;
  /** Workers that exited on their own (not killed by the harness), each started again. */
  readonly workerExits: number;
  /** What a read_committed reader was shown during the run. */
  readonly liveReader: Omit<LiveOutputReport, 'examples'>;
  /** From the commit of a fresh producer's marker on every output partition until a read_committed reader had them all; null: not within 60 s. */
  readonly endMarkerMs: number | null;
  readonly durationMs: number;
  readonly ok: boolean;
  readonly verify: VerifyReport;
  readonly liveReaderExamples: readonly string[];
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
  const ageMs = opts.eventTimeAgeMs ?? 0;
  if (avro && pipeline.name !== 'orders') throw new ChaosConfigError(`--format avro applies to the orders topology, not ${pipeline.name}`);
  let cluster: LocalClusterInfo | undefined;
  let ownCluster = false;
  const brokerCount = opts.cluster ? opts.cluster.nodes.length : (opts.brokers ?? 1);
  let multi = opts.cluster;
  let ownMulti = false;
  if ((opts.brokerKills || opts.stalls) && brokerCount < 2) throw new ChaosConfigError('--broker-kills and --stalls need a multi-broker cluster with proxies: give --brokers 3');
  if (brokerCount > 1 && opts.bootstrap) throw new ChaosConfigError('--brokers starts its own cluster (with fault proxies): leave out --bootstrap');
  if (multi) {
    cluster = multi.info;
  } else if (brokerCount > 1) {
    multi = await BrokerCluster.start({ dir: join(projectRoot(), '.onceflow', `chaos-${process.pid}`), brokers: brokerCount, proxies: true, withRegistry: avro, fresh: true });
    ownMulti = true;
    cluster = multi.info;
    log(`local ${brokerCount}-broker cluster ${multi.bootstrap} (answered after ${cluster.brokerStartMs} ms)`);
  } else if (opts.bootstrap) {
    cluster = opts.clusterDir ? readClusterInfo(opts.clusterDir) : undefined;
  } else {
    cluster = await startLocalCluster({ dir: join(projectRoot(), '.onceflow', `chaos-${process.pid}`), withRegistry: avro });
    ownCluster = true;
    log(`local broker ${cluster.bootstrap} (answered after ${cluster.brokerStartMs} ms)`);
  }
  const bootstrap = multi?.bootstrap ?? opts.bootstrap ?? cluster!.bootstrap;
  const tag = `${seed}-${Date.now().toString(36)}`;
  const appId = `chaos-${pipeline.name}-${tag}`;
  const input = `chaos-in-${tag}`;
  const output = `chaos-out-${tag}`;
  const partitions = opts.partitions ?? 6;
  const workers: WorkerProcess[] = [];
  const trigger = opts.phase && opts.onlyAtPhase ? new PhaseTrigger(opts.phase) : undefined;
  let liveReader: LiveOutputReader | undefined;
  // Set once the run is over: workers exiting from then on are being stopped, not crashing.
  let finishing = false;
  try {
    // A backfill's own topics must keep old records: the broker trims by their timestamps (docs/operations.md).
    const keep = ageMs > 0 ? { config: { 'retention.ms': '-1' } } : {};
    await withAdmin(bootstrap, (a) => ensureTopics(a, [{ name: input, partitions, ...keep }, { name: output, partitions, ...keep }]));
    liveReader = LiveOutputReader.start(bootstrap, output);
    const registryUrl = opts.registryUrl ?? (cluster?.registryUrl || undefined);
    if (avro && !registryUrl) throw new ChaosConfigError('--format avro needs a schema registry: give --registry-url with --bootstrap');
    const wire = avro ? await avroOrders(input, registryUrl!) : undefined;
    const plain = pipeline.input({ records: opts.records, seed, poison: opts.poison ?? 0, ...(ageMs > 0 ? { startAt: Math.floor((Date.now() - ageMs) / 60_000) * 60_000 } : {}) });
    const records = wire ? wire.encode(plain) : plain;
    const env = {
      ...pipeline.env(input, output),
      ONCEFLOW_BOOTSTRAP: bootstrap,
      ...(wire ? { ONCEFLOW_ORDERS_FORMAT: 'avro', ONCEFLOW_REGISTRY_URL: registryUrl! } : {}),
      ...(opts.brokenWorker ? { ONCEFLOW_UNSAFE_OFFSETS_OUTSIDE_TXN: '1' } : {}),
      ...(opts.cacheMaxRecords === undefined ? {} : { ONCEFLOW_CACHE_MAX_RECORDS: String(opts.cacheMaxRecords) }),
      ...(opts.stateStore === 'persistent'
        ? { ONCEFLOW_STATE_STORE: 'persistent', ONCEFLOW_STATE_DIR: mkdtempSync(join(tmpdir(), 'onceflow-chaos-state-')), ONCEFLOW_STATE_CHECKPOINT_INTERVAL_MS: '1000' }
        : {}),
    };
    const compiled = compile(await withEnv(env, () => loadTopology(pipeline.file)), { appId });
    const repartitionTopics = compiled.topics.filter((t) => t.kind === 'repartition').map((t) => t.name);
    const deadLetterTopic = compiled.deadLetterTopic;

    let nextInstance = 0;
    const live = new Map<string, WorkerProcess>();
    // A worker the harness stops or kills is first taken out of `live` or replaced in it; one that exits while still there exited on its own.
    let workerExits = 0;
    const spawnWorker = (instance: string, extraEnv: Record<string, string> = {}) => {
      const start = (armable: Record<string, string>) => new WorkerProcess(instance, pipeline.file, ['--app-id', appId, '--instance-id', instance, '--guarantee', guarantee], { ...env, ...armable, ...extraEnv });
      const w = trigger ? trigger.spawn(start) : start({});
      workers.push(w);
      // A worker that exits on its own is started again (as a supervisor would) and counted: each is a finding.
      void w.exit().then(({ code, signal }) => {
        if (finishing || live.get(instance) !== w || harnessStopped.has(w)) return;
        workerExits++;
        log(`${instance} exited on its own (code ${code}, signal ${signal}), started again; its last stderr:\n  ${w.stderr.slice(-12).join('\n  ')}`);
        live.set(instance, spawnWorker(instance));
      });
      return w;
    };
    const harnessStopped = new Set<WorkerProcess>();
    if (opts.backlog === true) await produceAll(bootstrap, input, records, {}, ageMs);
    for (let i = 0; i < opts.replicas; i++) {
      const id = `r${nextInstance++}`;
      live.set(id, spawnWorker(id));
    }
    await Promise.all([...live.values()].map((w) => w.waitFor((e) => e.type === 'started', 60_000, 'start')));

    // Feed the input in slices over feedMs so that kills hit workers that are busy.
    const feedMs = opts.feedMs ?? 20_000;
    const slices = 20;
    const feeding = (async () => {
      for (let s = 0; s < slices && opts.backlog !== true; s++) {
        const part = records.slice(Math.floor((s * records.length) / slices), Math.floor(((s + 1) * records.length) / slices));
        await produceAll(bootstrap, input, part, {}, ageMs);
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
    /** onlyAtPhase: the victim, busy with the feed, is armed now and dies at its next pass of the phase with outputs. */
    const killAtPhase = async (victim: string, w: WorkerProcess, armed: PhaseTrigger) => {
      const armedAt = Date.now();
      armed.arm(w);
      if ((await w.exitWithin(40_000)) === undefined) {
        armed.disarm(w);
        harnessStopped.delete(w);
        log(`${victim} armed but no transaction of it wrote output within 40 s: no kill`);
        return;
      }
      killPhases[armed.phase] = (killPhases[armed.phase] ?? 0) + 1;
      log(`kill ${++killsDone}/${opts.kills}: ${victim} died at ${armed.phase}, ${Date.now() - armedAt} ms after it was armed; started again`);
      live.set(victim, spawnWorker(victim));
    };
    for (let k = 0; k < opts.kills; k++) {
      events.push({
        at: rand() * feedMs,
        run: async () => {
          const drawn = drawLive();
          if (!drawn) return;
          const [victim, w] = drawn;
          // Every other kill is placed inside a transaction phase by the worker itself, on its restart.
          const phase = opts.phase ?? (k % 2 === 1 ? CHAOS_PHASES[Math.floor(rand() * CHAOS_PHASES.length)] : undefined);
          harnessStopped.add(w);
          if (trigger) {
            await killAtPhase(victim, w, trigger);
            return;
          }
          w.kill('SIGKILL');
          await w.exit();
          killPhases.random = (killPhases.random ?? 0) + 1;
          log(`kill ${++killsDone}/${opts.kills}: SIGKILL ${victim}${phase ? `, restarted to die again at ${phase}` : ''}`);
          let next = spawnWorker(victim, phase ? { ONCEFLOW_CHAOS_KILL_AT: `${phase}:${1 + Math.floor(rand() * 5)}` } : {});
          live.set(victim, next);
          if (phase) {
            // Its death at the phase is the harness's doing, not the worker's.
            harnessStopped.add(next);
            const died = (await next.exitWithin(40_000)) !== undefined;
            if (died) {
              killPhases[phase] = (killPhases[phase] ?? 0) + 1;
              next = spawnWorker(victim);
              live.set(victim, next);
            } else {
              log(`${victim} never reached ${phase} within 40 s (no records for it): replaced by a plain replica, no kill counted`);
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
          if (multi) {
            const nodeId = 1 + (b % multi.nodes.length);
            log(`broker restart ${b + 1}: node ${nodeId}`);
            await multi.restart(nodeId);
            return;
          }
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
          harnessStopped.add(old);
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
            harnessStopped.add(victim);
            victim.kill('SIGKILL');
            await victim.exit();
            pair = [spawnWorker(id), spawnWorker(id)];
          }
          // One of the two is meant to step back on its own.
          for (const member of pair) harnessStopped.add(member);
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
    const brokerKillTargets: { target: BrokerKillTarget; nodeId: number }[] = [];
    for (let b = 0; b < (opts.brokerKills ?? 0); b++) {
      events.push({
        at: rand() * feedMs,
        run: async () => {
          const cluster3 = multi!;
          const targets = opts.brokerKillOrder?.length ? opts.brokerKillOrder : BROKER_KILL_TARGETS;
          const target = targets[b % targets.length]!;
          let nodeId: number;
          let what: string;
          if (target === 'transaction-coordinator') {
            const id = drawLive()?.[0] ?? 'r0';
            nodeId = await cluster3.transactionCoordinator(`${appId}-${id}`);
            what = `the transaction coordinator of ${id}`;
          } else if (target === 'group-coordinator') {
            nodeId = await cluster3.groupCoordinator(appId);
            what = `the coordinator of group ${appId}`;
          } else {
            const leaders = [...(await cluster3.partitionLeaders(output))];
            const [partition, leader] = leaders[Math.floor(rand() * leaders.length)] ?? [0, 1];
            nodeId = leader;
            what = `the leader of ${output}/${partition}`;
          }
          brokerKillTargets.push({ target, nodeId });
          const t = Date.now();
          await cluster3.restart(nodeId);
          log(`broker kill ${b + 1}/${opts.brokerKills}: kill -9 node ${nodeId} (${what}), answering again after ${Date.now() - t} ms`);
        },
      });
    }
    let stallsBeyondSessionTimeout = 0;
    for (let st = 0; st < (opts.stalls ?? 0); st++) {
      events.push({
        at: rand() * feedMs,
        run: async () => {
          const drawn = drawLive();
          if (!drawn) return;
          const [id] = drawn;
          const clientId = `${appId}-${id}`;
          // Every other stall outlasts the session timeout: the group moves the worker's partitions while it still holds an open transaction.
          const long = st % 2 === 1;
          const ms = long ? SESSION_TIMEOUT_MS + 2_000 + Math.floor(rand() * 3_000) : 2_000 + Math.floor(rand() * 4_000);
          if (long) stallsBeyondSessionTimeout++;
          const connections = multi!.proxies.reduce((n, proxy) => n + proxy.stall(ms, (c) => c.clientId === clientId), 0);
          log(`stall ${st + 1}/${opts.stalls}: the connections of ${id} (${connections} open now, and any it opens meanwhile) forward nothing for ${ms} ms${long ? ' (beyond the session timeout)' : ''}`);
        },
      });
    }
    let scaled = false;
    let peakReplicas = live.size;
    for (let step = 0; step < (opts.scale ?? 0); step++) {
      events.push({
        at: feedMs * 0.3,
        run: async () => {
          const id = `r${nextInstance++}`;
          log(`scale up: ${id}`);
          live.set(id, spawnWorker(id));
          peakReplicas = Math.max(peakReplicas, live.size);
          scaled = true;
        },
      });
      events.push({
        at: feedMs * 0.7,
        run: async () => {
          const [id, w] = [...live.entries()][0]!;
          log(`scale down: SIGTERM ${id}`);
          harnessStopped.add(w);
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
    // A stall still running would hold a worker's offsets back: caught up is asked once every stall has ended.
    await sleep(Math.max(0, ...(multi?.proxies ?? []).map((p) => p.stalledUntil - Date.now())));
    try {
      await waitCaughtUp({ bootstrap, groupId: appId, plainTopics: [input], transactionalTopics: repartitionTopics, timeoutMs: 300_000, stableMs: 4_000 });
    } catch (e) {
      // A worker that stopped making progress is the finding: its last lines say where it stopped.
      for (const [id, w] of live) {
        log(`${id} (pid ${w.pid}, ${w.alive ? 'alive' : 'exited'}), last stderr:\n  ${w.stderr.slice(-20).join('\n  ')}`);
        const stacks = await w.stackReport().catch((err: unknown) => `no report: ${String(err)}`);
        if (stacks !== undefined) log(`${id} now:\n  ${stacks}`);
      }
      throw e;
    }
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
    const committedOutput = await readTopic(bootstrap, output, { isolation: 'read_committed', missingTopicGraceMs: 30_000 });
    await liveReader.stop();
    const shown = liveReader.compare(committedOutput);
    const liveOk = shown.duplicates === 0 && shown.outOfOrder === 0 && shown.aborted === 0 && shown.skipped === 0;
    log(`read_committed reader during the run: ${shown.records} records, ${shown.duplicates} duplicates, ${shown.outOfOrder} out of order, ${shown.aborted} aborted, ${shown.skipped} skipped; ${shown.notReached} committed records past where it had read when it stopped`);
    const endMarkerMs = (await endMarkerVisibleMs(bootstrap, output, { timeoutMs: 60_000 })) ?? null;
    log(endMarkerMs === null ? 'end markers NOT readable read_committed within 60 s: a transaction was left open' : `end markers readable read_committed after ${endMarkerMs} ms`);
    finishing = true;
    const { examples: liveReaderExamples, ...liveReaderCounts } = shown;
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
      peakReplicas,
      guarantee,
      pipeline: pipeline.name,
      outputTopic: output,
      format: avro ? 'avro' : 'json',
      eventTimeAgeMs: ageMs,
      seed,
      duplicates: report.duplicates,
      lost: report.lost,
      aggregateMismatches: report.aggregateMismatches,
      dlqRecords: report.dlqRecords,
      poisonInjected,
      cacheMaxRecords: opts.cacheMaxRecords ?? null,
      stateStore: opts.stateStore ?? 'memory',
      abortedSeenByReadUncommitted: report.abortedSeenByReadUncommitted ?? 0,
      brokers: brokerCount,
      brokerKills: opts.brokerKills ?? 0,
      brokerKillTargets,
      stalls: opts.stalls ?? 0,
      stallsBeyondSessionTimeout,
      workerExits,
      liveReader: liveReaderCounts,
      endMarkerMs,
      durationMs: Date.now() - started,
      ok: report.ok && report.dlqRecords === poisonInjected && liveOk && endMarkerMs !== null,
      verify: report,
      liveReaderExamples,
    };
    return result;
  } finally {
    finishing = true;
    await liveReader?.stop().catch(() => undefined);
    await Promise.all(workers.map((w) => w.stop(10_000)));
    trigger?.close();
    if (ownMulti && multi) await multi.stop();
    else if (ownCluster && cluster) await stopLocalCluster(cluster.dir);
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
