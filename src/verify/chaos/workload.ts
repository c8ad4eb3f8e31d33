import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { loadTopology } from '../../dsl/load.ts';
import { compile } from '../../graph/compile.ts';
import { ensureTopics, withAdmin } from '../../kafka/admin.ts';
import { avroOrders } from '../avro-orders.ts';
import { produceAll, type InputRecord } from '../orders-input.ts';
import type { Pipeline } from '../pipelines.ts';
import type { ExpectationModel } from '../verify.ts';
import { ChaosConfigError, type ChaosOptions } from './options.ts';

/** The names a run gives its application and its own topics. */
export interface RunNames {
  readonly appId: string;
  readonly inputTopic: string;
  readonly outputTopic: string;
}

/** What the replicas process, how they are configured for it, and what the verifier expects of them. */
export interface Workload {
  readonly records: readonly InputRecord<string | Buffer>[];
  readonly workerEnv: Readonly<Record<string, string>>;
  readonly model: ExpectationModel;
  readonly repartitionTopics: readonly string[];
  readonly deadLetterTopic: string;
}

export async function createTopics(bootstrap: string, names: RunNames, partitions: number, eventTimeAgeMs: number): Promise<void> {
  // A backfill's own topics must keep old records: the broker trims by their timestamps (docs/operations.md).
  const keep = eventTimeAgeMs > 0 ? { config: { 'retention.ms': '-1' } } : {};
  await withAdmin(bootstrap, (admin) => ensureTopics(admin, [{ name: names.inputTopic, partitions, ...keep }, { name: names.outputTopic, partitions, ...keep }]));
}

export async function prepareWorkload(
  opts: ChaosOptions,
  run: { readonly pipeline: Pipeline; readonly names: RunNames; readonly bootstrap: string; readonly clusterRegistryUrl: string | undefined; readonly seed: number; readonly eventTimeAgeMs: number },
): Promise<Workload> {
  const { pipeline, names, bootstrap, seed, eventTimeAgeMs } = run;
  const avro = opts.format === 'avro';
  const registryUrl = opts.registryUrl ?? run.clusterRegistryUrl;
  if (avro && !registryUrl) throw new ChaosConfigError('--format avro needs a schema registry: give --registry-url with --bootstrap');
  const wire = avro ? await avroOrders(names.inputTopic, registryUrl!) : undefined;
  const startAt = eventTimeAgeMs > 0 ? { startAt: Math.floor((Date.now() - eventTimeAgeMs) / 60_000) * 60_000 } : {};
  const plain = pipeline.input({ records: opts.records, seed, poison: opts.poison ?? 0, ...startAt });
  const workerEnv = {
    ...pipeline.env(names.inputTopic, names.outputTopic),
    ONCEFLOW_BOOTSTRAP: bootstrap,
    ...(wire ? { ONCEFLOW_ORDERS_FORMAT: 'avro', ONCEFLOW_REGISTRY_URL: registryUrl! } : {}),
    ...(opts.brokenWorker ? { ONCEFLOW_UNSAFE_OFFSETS_OUTSIDE_TXN: '1' } : {}),
    ...(opts.cacheMaxRecords === undefined ? {} : { ONCEFLOW_CACHE_MAX_RECORDS: String(opts.cacheMaxRecords) }),
    ...(opts.threads === undefined ? {} : { ONCEFLOW_THREADS: String(opts.threads) }),
    ...(opts.stateStore === 'persistent'
      ? { ONCEFLOW_STATE_STORE: 'persistent', ONCEFLOW_STATE_DIR: mkdtempSync(join(tmpdir(), 'onceflow-chaos-state-')), ONCEFLOW_STATE_CHECKPOINT_INTERVAL_MS: '1000' }
      : {}),
    ...(opts.standbyReplicas === undefined ? {} : { ONCEFLOW_STANDBY_REPLICAS: String(opts.standbyReplicas) }),
  };
  const compiled = compile(await withEnv(workerEnv, () => loadTopology(pipeline.file)), { appId: names.appId });
  return {
    records: wire ? wire.encode(plain) : plain,
    workerEnv,
    model: wire ? wire.decoded(pipeline.model) : pipeline.model,
    repartitionTopics: compiled.topics.filter((topic) => topic.kind === 'repartition').map((topic) => topic.name),
    deadLetterTopic: compiled.deadLetterTopic,
  };
}

/**
 * Writes the input in 20 slices over `feedMs` (nothing with a backlog, which is written before the
 * replicas start), so that the faults hit replicas that are busy.
 */
export async function feedInSlices(bootstrap: string, inputTopic: string, workload: Workload, opts: { readonly feedMs: number; readonly backlog: boolean; readonly eventTimeAgeMs: number }): Promise<void> {
  const { records } = workload;
  const slices = 20;
  for (let slice = 0; slice < slices && !opts.backlog; slice++) {
    const part = records.slice(Math.floor((slice * records.length) / slices), Math.floor(((slice + 1) * records.length) / slices));
    await produceAll(bootstrap, inputTopic, part, {}, opts.eventTimeAgeMs);
    await sleep(opts.feedMs / slices);
  }
}

/** Topology files read their topic names from the environment; set it only while one loads. */
async function withEnv<T>(env: Record<string, string>, fn: () => Promise<T>): Promise<T> {
  const saved = Object.fromEntries(Object.keys(env).map((name) => [name, process.env[name]]));
  Object.assign(process.env, env);
  try {
    return await fn();
  } finally {
    for (const [name, value] of Object.entries(saved)) {
      if (value === undefined) delete process.env[name];
      else process.env[name] = value;
    }
  }
}
