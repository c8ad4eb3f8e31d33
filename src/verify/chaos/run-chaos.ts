import { LiveOutputReader } from '../live-output.ts';
import { pipelines } from '../pipelines.ts';
import { prng, produceAll } from '../orders-input.ts';
import { scheduleBrokerKills, scheduleBrokerRestarts } from './broker-faults.ts';
import { waitForCatchUp } from './catch-up.ts';
import { ChaosCluster } from './cluster.ts';
import { scheduleDuplicateInstances } from './duplicate-instances.ts';
import type { FaultScope } from './fault-scope.ts';
import { brokerCount, checkOptions, type ChaosOptions } from './options.ts';
import { checkOutput } from './output-check.ts';
import { scheduleOverlappingRestarts } from './overlapping-restarts.ts';
import { Replicas } from './replicas.ts';
import { chaosResult, type ChaosResult } from './result.ts';
import { scheduleScaling } from './scaling.ts';
import { runInTimeOrder } from './schedule.ts';
import { scheduleStalls } from './stalls.ts';
import { scheduleWorkerKills } from './worker-kills.ts';
import { PhaseTrigger } from '../phase-trigger.ts';
import { createTopics, feedInSlices, prepareWorkload, type RunNames } from './workload.ts';

/**
 * Kafka Streams' EOS system test, as a product feature: replicas process a stream while they are
 * SIGKILLed (at random moments and inside each phase of a transaction), the broker restarts and
 * the group scales; then the verifier checks the committed output against the input.
 */
export async function runChaos(opts: ChaosOptions): Promise<ChaosResult> {
  const startedAt = Date.now();
  const log = opts.log ?? (() => undefined);
  const seed = opts.seed ?? 42;
  const pipeline = pipelines[opts.pipeline ?? 'orders'];
  const guarantee = opts.guarantee ?? 'exactly_once';
  const format = opts.format === 'avro' ? 'avro' : 'json';
  const eventTimeAgeMs = opts.eventTimeAgeMs ?? 0;
  checkOptions(opts, pipeline.name);
  const cluster = await ChaosCluster.start(opts, format === 'avro', log);
  const { bootstrap } = cluster;
  const tag = `${seed}-${Date.now().toString(36)}`;
  const names: RunNames = { appId: `chaos-${pipeline.name}-${tag}`, inputTopic: `chaos-in-${tag}`, outputTopic: `chaos-out-${tag}` };
  let liveReader: LiveOutputReader | undefined;
  let replicas: Replicas | undefined;
  const trigger = opts.phase && opts.onlyAtPhase ? new PhaseTrigger(opts.phase) : undefined;
  try {
    await createTopics(bootstrap, names, opts.partitions ?? 6, eventTimeAgeMs);
    liveReader = LiveOutputReader.start(bootstrap, names.outputTopic);
    const workload = await prepareWorkload(opts, { pipeline, names, bootstrap, clusterRegistryUrl: cluster.registryUrl, seed, eventTimeAgeMs });

    replicas = new Replicas({ topologyFile: pipeline.file, appId: names.appId, guarantee, env: workload.workerEnv, log, trigger });
    if (opts.backlog === true) await produceAll(bootstrap, names.inputTopic, workload.records, {}, eventTimeAgeMs);
    for (let i = 0; i < opts.replicas; i++) replicas.startLive(replicas.newInstanceId());
    await replicas.allStarted();

    const feedMs = opts.feedMs ?? 20_000;
    const feeding = feedInSlices(bootstrap, names.inputTopic, workload, { feedMs, backlog: opts.backlog === true, eventTimeAgeMs });
    // One seeded stream for every draw of every fault kind; they draw their moments in this order.
    const scope: FaultScope = { timeline: { random: prng(seed * 7919 + 1), feedMs }, replicas, cluster, appId: names.appId, outputTopic: names.outputTopic, log };
    const kills = scheduleWorkerKills(scope, opts.kills, opts.phase, trigger);
    const brokerRestarts = scheduleBrokerRestarts(scope, opts.brokerRestarts ?? 0);
    const overlappingRestarts = scheduleOverlappingRestarts(scope, opts.overlappingRestarts ?? 0);
    const duplicateInstances = scheduleDuplicateInstances(scope, opts.duplicateInstances ?? 0);
    const brokerKills = scheduleBrokerKills(scope, opts.brokerKills ?? 0, opts.brokerKillOrder);
    const stalls = scheduleStalls(scope, opts.stalls ?? 0);
    const scaling = scheduleScaling(scope, opts.scale ?? 0);
    await runInTimeOrder([...kills.events, ...brokerRestarts, ...overlappingRestarts, ...duplicateInstances.events, ...brokerKills.events, ...stalls.events, ...scaling.events]);
    await feeding;

    log('input complete; waiting for the group to catch up');
    await waitForCatchUp(bootstrap, names, workload.repartitionTopics, cluster, replicas);
    const check = await checkOutput(bootstrap, names, workload, liveReader, log);
    replicas.finish();
    return chaosResult(
      { opts, pipelineName: pipeline.name, outputTopic: names.outputTopic, seed, guarantee, format, eventTimeAgeMs, brokers: brokerCount(opts), startedAt },
      {
        killPhases: kills.killPhases,
        steppedBack: duplicateInstances.steppedBack,
        scaled: scaling.scaled,
        peakReplicas: scaling.peakReplicas,
        brokerKillTargets: brokerKills.targets,
        stallsBeyondSessionTimeout: stalls.beyondSessionTimeout,
        workerExits: replicas.workerExits,
      },
      check,
    );
  } finally {
    replicas?.finish();
    await liveReader?.stop().catch(() => undefined);
    await replicas?.stopAll();
    await cluster.stop();
    trigger?.close();
  }
}
