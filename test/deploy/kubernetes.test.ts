/**
 * deploy/kubernetes/ against the worker it deploys: the container's args parsed by the `run`
 * command's own commander definition, its env and config file through the config layer, the probe
 * and scrape paths asked of the real health server, the grace period against the shutdown timeout,
 * the volume against the state dir, and the resources against the bench result they cite.
 */
import assert from 'node:assert/strict';
import { mkdtempSync, readFileSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { basename, dirname, join } from 'node:path';
import { after, test } from 'node:test';
import { Command } from 'commander';
import { configFlagsFrom, type ConfigCommandOptions } from '../../src/cli/config.ts';
import { isKnownEnvVar, resolveConfigSources, resolveRuntimeOptions } from '../../src/cli/config-sources.ts';
import { registerRun, SHUTDOWN_EXIT_MARGIN_MS } from '../../src/cli/run.ts';
import { startObservability } from '../../src/observability/health.ts';
import { parseWorkerConfig, type WorkerConfig } from '../../src/runtime/base/config.ts';
import { FakeWorker } from '../observability/fake-worker.ts';
import { containerEnv, deployDir, loadManifests, probePort, quantityBytes, resourceOf, root, workerContainer, type Resource, type StatefulSet } from './manifests.ts';

const { files, resources } = loadManifests();
const set = resourceOf<StatefulSet>(resources, 'StatefulSet');
const container = workerContainer(set);
const configMap = resourceOf(resources, 'ConfigMap');
const service = resourceOf<Resource & { spec: { clusterIP: string; selector: Record<string, string>; ports: { targetPort: string | number }[] } }>(resources, 'Service');
const budget = resourceOf<Resource & { spec: { maxUnavailable?: number; selector: { matchLabels: Record<string, string> } } }>(resources, 'PodDisruptionBudget');
const podLabels = set.spec.template.metadata.labels ?? {};
const pod = { podName: `${set.metadata.name}-0`, namespace: 'orders-ns', secrets: { 'onceflow-orders-query': { token: 'a-token-from-the-secret-0123456789' } } };
const env = containerEnv(container, pod);

const scratch = mkdtempSync(join(tmpdir(), 'onceflow-deploy-'));
after(() => rmSync(scratch, { recursive: true, force: true }));

/** The args as `onceflow run` parses them: commander throws on a flag the command does not define. */
async function parseRunArgs(args: readonly string[]): Promise<{ topology: string; opts: ConfigCommandOptions & { httpPort?: string; metricsPort?: string } }> {
  const program = new Command('onceflow').exitOverride();
  registerRun(program);
  const run = program.commands.find((c) => c.name() === 'run');
  assert.ok(run);
  let parsed: { topology: string; opts: ConfigCommandOptions } | undefined;
  run.exitOverride().action((topology: string, opts: ConfigCommandOptions) => {
    parsed = { topology, opts };
  });
  await program.parseAsync([...args], { from: 'user' });
  assert.ok(parsed, 'the args select the run command');
  return parsed;
}

/** The worker config the pod runs with: its args over its env over the ConfigMap's file at the mounted path. */
async function effectiveConfig(): Promise<{ config: WorkerConfig; opts: ConfigCommandOptions; topology: string }> {
  const { topology, opts } = await parseRunArgs(container.args);
  assert.ok(opts.config, 'the args name a config file');
  const mount = container.volumeMounts.find((m) => m.mountPath === dirname(opts.config!));
  assert.ok(mount, `a volume is mounted at ${dirname(opts.config)}`);
  const volume = set.spec.template.spec.volumes.find((v) => v.name === mount.name);
  assert.equal(volume?.configMap?.name, configMap.metadata.name, 'the config file comes from the ConfigMap');
  const text = configMap.data?.[basename(opts.config)];
  assert.ok(text !== undefined, `the ConfigMap holds ${basename(opts.config)}`);
  const file = join(scratch, basename(opts.config));
  writeFileSync(file, text);
  const resolved = resolveConfigSources({ file, env, flags: configFlagsFrom(opts) });
  assert.deepEqual(resolved.unknownEnv, [], 'every ONCEFLOW_* variable is one onceflow reads');
  return { config: parseWorkerConfig(resolved.input), opts, topology };
}

test('the kustomization lists every manifest in the folder, and the StatefulSet, Service, budget and ConfigMap select the same pods', () => {
  const yamlFiles = readdirSync(deployDir).filter((f) => f.endsWith('.yaml') && f !== 'kustomization.yaml');
  assert.deepEqual([...files].sort(), yamlFiles.sort());
  assert.deepEqual(set.spec.selector.matchLabels, Object.fromEntries(Object.keys(set.spec.selector.matchLabels).map((k) => [k, podLabels[k]])));
  for (const [k, v] of Object.entries(service.spec.selector)) assert.equal(podLabels[k], v, `service selector ${k}`);
  for (const [k, v] of Object.entries(budget.spec.selector.matchLabels)) assert.equal(podLabels[k], v, `budget selector ${k}`);
  assert.equal(budget.spec.maxUnavailable, 1);
  assert.equal(set.spec.serviceName, service.metadata.name);
  assert.equal(service.spec.clusterIP, 'None', 'headless: each pod gets its own DNS name');
});

test('the args are flags `onceflow run` defines, on a topology the image holds; the env and the config file make a valid worker config', async () => {
  const { config, topology } = await effectiveConfig();
  readFileSync(join(root, topology)); // the image is the repository: WORKDIR /app holds topology/
  assert.equal(config.appId, 'orders');
  assert.equal(config.guarantee, 'exactly_once');
  for (const name of Object.keys(env)) if (name.startsWith('ONCEFLOW_')) assert.ok(isKnownEnvVar(name), `${name} is read by onceflow`);
  await assert.rejects(parseRunArgs([...container.args, '--no-such-flag']), /unknown option/, 'a flag run does not define is refused');
});

test('the instance id is the pod name, valid for each ordinal, and the advertised URL names the pod through the headless service', async () => {
  const instanceEnv = container.env.find((v) => v.name === 'ONCEFLOW_INSTANCE_ID');
  assert.equal(instanceEnv?.valueFrom?.fieldRef?.fieldPath, 'metadata.name');
  for (let ordinal = 0; ordinal < set.spec.replicas; ordinal++) {
    const podName = `${set.metadata.name}-${ordinal}`;
    const input = resolveConfigSources({ env: containerEnv(container, { ...pod, podName }), flags: { appId: 'orders' } }).input;
    assert.equal(parseWorkerConfig(input).instanceId, podName);
  }
  const { config } = await effectiveConfig();
  const advertised = new URL(config.advertisedUrl ?? '');
  assert.equal(advertised.hostname, `${pod.podName}.${service.metadata.name}.${pod.namespace}.svc`);
  assert.equal(Number(advertised.port), resolveRuntimeOptions(env).httpPort);
});

test('the store queries take their token from a Secret the pod cannot start without', async () => {
  const token = container.env.find((v) => v.name === 'ONCEFLOW_QUERY_TOKEN');
  assert.ok(token?.valueFrom?.secretKeyRef, 'from a Secret, not a literal');
  assert.notEqual(token.valueFrom.secretKeyRef.optional, true);
  assert.match(readFileSync(join(deployDir, 'statefulset.yaml'), 'utf8'), new RegExp(`kubectl create secret generic ${token.valueFrom.secretKeyRef.name} --from-literal=${token.valueFrom.secretKeyRef.key}=`));
  const { config } = await effectiveConfig();
  assert.equal(config.queryToken, pod.secrets['onceflow-orders-query'].token);
});

test('probes, the service and the scrape annotations use the port the health server listens on, and the paths it serves', async () => {
  const { config } = await effectiveConfig();
  const httpPort = resolveRuntimeOptions(env).httpPort;
  assert.ok(httpPort !== undefined, 'the pod serves HTTP');
  for (const probe of [container.livenessProbe, container.readinessProbe, container.startupProbe]) if (probe) assert.equal(probePort(container, probe), httpPort);
  const target = service.spec.ports[0]?.targetPort;
  assert.equal(typeof target === 'number' ? target : container.ports.find((p) => p.name === target)?.containerPort, httpPort);
  const annotations = set.spec.template.metadata.annotations ?? {};
  assert.equal(annotations['prometheus.io/scrape'], 'true');
  assert.equal(Number(annotations['prometheus.io/port']), httpPort);

  // The same paths asked of the real server, for a worker set up as the pod's.
  const worker = new FakeWorker({ ...config, instanceId: pod.podName });
  const server = await startObservability(worker, { port: 0, host: '127.0.0.1', processMetrics: false });
  try {
    const get = async (path: string | undefined): Promise<Response> => fetch(`http://127.0.0.1:${server.port}${path ?? '/unset'}`);
    assert.equal((await get(container.livenessProbe.httpGet.path)).status, 200, 'alive while starting');
    assert.equal((await get(container.startupProbe?.httpGet.path)).status, 200);
    assert.equal((await get(container.readinessProbe.httpGet.path)).status, 503, 'not ready before it owns partitions');
    worker.send({ type: 'started', transactionalId: worker.transactionalId });
    worker.send({ type: 'assigned', partitions: ['orders-0'] });
    assert.equal((await get(container.readinessProbe.httpGet.path)).status, 200);
    const metrics = await get(annotations['prometheus.io/path']);
    assert.equal(metrics.status, 200);
    assert.match(await metrics.text(), /^onceflow_/m);
  } finally {
    await server.close();
  }
});

test('the grace period outlasts the shutdown timeout and the margin after which the CLI exits on its own', async () => {
  const { config } = await effectiveConfig();
  assert.ok(set.spec.template.spec.terminationGracePeriodSeconds * 1_000 > config.shutdownTimeoutMs + SHUTDOWN_EXIT_MARGIN_MS);
});

test('persistent state lives on the claim template, mounted at the state dir the args give', async () => {
  const { config, opts } = await effectiveConfig();
  assert.equal(config.stateStore, 'persistent');
  assert.equal(opts.stateDir, config.stateDir, 'the args set the state dir');
  const mount = container.volumeMounts.find((m) => m.mountPath === config.stateDir);
  assert.ok(mount, `a volume is mounted at ${config.stateDir}`);
  assert.deepEqual(set.spec.volumeClaimTemplates.map((c) => c.metadata.name), [mount.name]);
});

test('the resources cover the bench result they cite', async () => {
  const text = readFileSync(join(deployDir, 'statefulset.yaml'), 'utf8');
  const cited = /Sized from (bench\/results\/[\w.-]+\.json), pipeline `([^`]+)`, contender `([^`]+)`/.exec(text);
  assert.ok(cited, 'the resources name the bench result they are sized from');
  const result = JSON.parse(readFileSync(join(root, cited[1]!), 'utf8')) as { summary: Record<string, Record<string, { throughput: number; cpuMicrosPerRecord: number; peakRssMb: number }>> };
  const run = result.summary[cited[2]!]?.[cited[3]!];
  assert.ok(run, `${cited[1]} has ${cited[2]} / ${cited[3]}`);
  const { requests, limits } = container.resources;
  assert.equal(requests.memory, limits.memory, 'memory is not overcommitted');
  assert.ok(quantityBytes(limits.memory!) > run.peakRssMb * 2 ** 20, `memory limit above the measured peak RSS of ${run.peakRssMb} MB`);
  assert.ok(Number(requests.cpu) >= (run.throughput * run.cpuMicrosPerRecord) / 1e6, 'a CPU request that sustains the measured rate');
  for (const figure of [Math.round(run.peakRssMb), Math.round(run.cpuMicrosPerRecord), Math.round(run.throughput)]) {
    assert.ok(text.includes(figure.toLocaleString('en-US')), `the comment quotes ${figure} from the result`);
  }
  // The bench's onceflow-eos contender runs one processing thread.
  assert.equal((await effectiveConfig()).config.threads, 1);
});
