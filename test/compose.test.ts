import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { test } from 'node:test';
import { parse } from 'yaml';
import { isKnownEnvVar, resolveConfigSources, resolveRuntimeOptions } from '../src/cli/config-sources.ts';
import { parseWorkerConfig } from '../src/runtime/base/config.ts';
import { projectRoot } from '../src/kafka/paths.ts';
import { ORDERS_DEFAULTS } from '../topology/orders.ts';

interface Service {
  image?: string;
  build?: unknown;
  command?: string[];
  entrypoint?: string[];
  environment?: Record<string, string | number>;
  ports?: string[];
  expose?: string[];
  deploy?: { replicas?: number };
  healthcheck?: { test?: string[] };
  depends_on?: Record<string, { condition: string }>;
  profiles?: string[];
}
const root = projectRoot();
const compose = parse(readFileSync(join(root, 'compose.yaml'), 'utf8'), { merge: true }) as { services: Record<string, Service> };
const services = compose.services;
const brokers = ['kafka-1', 'kafka-2', 'kafka-3'];
const env = (s: string): Record<string, string> => Object.fromEntries(Object.entries(services[s]?.environment ?? {}).map(([k, v]) => [k, String(v)]));
const listeners = (spec: string): Map<string, { host: string; port: number }> =>
  new Map(spec.split(',').map((l) => {
    const m = /^([A-Z_]+):\/\/([^:]*):(\d+)$/.exec(l.trim());
    assert.ok(m, `listener ${l}`);
    return [m[1]!, { host: m[2]!, port: Number(m[3]) }];
  }));

test('the services exist: three brokers, the registry, three worker replicas, the verifier', () => {
  for (const s of [...brokers, 'kafka-init', 'schema-registry', 'worker', 'verifier']) assert.ok(services[s], `service ${s}`);
  for (const b of brokers) assert.match(services[b]?.image ?? '', /^apache\/kafka:4\.1\.\d+$/);
  assert.match(services['schema-registry']?.image ?? '', /^confluentinc\/cp-schema-registry:/);
  assert.equal(services.worker?.build, '.');
  assert.equal(services.worker?.deploy?.replicas, 3);
  assert.deepEqual(services.worker?.command, ['run', 'topology/orders.ts', '--app-id', 'orders']);
  assert.equal(services.verifier?.command?.[0], 'verify');
  // the verifier runs the image the worker service builds
  assert.equal(services.verifier?.image, services.worker?.image);
});

test('every ONCEFLOW_* variable is one the config layer reads, and the worker env is a valid config', () => {
  for (const [name, s] of Object.entries(services)) {
    for (const key of Object.keys(s.environment ?? {})) {
      if (key.startsWith('ONCEFLOW_')) assert.ok(isKnownEnvVar(key), `${name}: ${key} is not read by onceflow`);
    }
  }
  const workerEnv = env('worker');
  const { input, unknownEnv } = resolveConfigSources({ env: workerEnv, flags: { appId: 'orders' } });
  assert.deepEqual(unknownEnv, []);
  const config = parseWorkerConfig(input);
  assert.equal(config.guarantee, 'exactly_once');
  assert.equal(config.kafka['security.protocol'], 'PLAINTEXT');
  assert.ok(!('ONCEFLOW_INSTANCE_ID' in workerEnv), 'replicas must not share an instance id');
  resolveRuntimeOptions(workerEnv);
});

test('ports agree: bootstrap, advertised listeners, published ports, controller quorum, registry, health port', () => {
  const quorum = env('kafka-1').KAFKA_CONTROLLER_QUORUM_VOTERS ?? '';
  const internal: string[] = [];
  brokers.forEach((b, i) => {
    const e = env(b);
    assert.equal(e.KAFKA_NODE_ID, String(i + 1));
    const listen = listeners(e.KAFKA_LISTENERS ?? '');
    const advertised = listeners(e.KAFKA_ADVERTISED_LISTENERS ?? '');
    for (const [name, a] of advertised) assert.equal(listen.get(name)?.port, a.port, `${b}: ${name} advertised on the port it listens on`);
    assert.equal(advertised.get('INTERNAL')?.host, b);
    internal.push(`${b}:${advertised.get('INTERNAL')?.port}`);
    const external = advertised.get('EXTERNAL');
    assert.ok(external);
    assert.ok(services[b]?.ports?.includes(`${external.port}:${external.port}`), `${b} publishes ${external.port}`);
    assert.ok(quorum.split(',').includes(`${i + 1}@${b}:${listen.get('CONTROLLER')?.port}`), `${b} is a voter on its controller port`);
    assert.equal(e.KAFKA_CONTROLLER_QUORUM_VOTERS, quorum);
  });
  for (const s of ['worker', 'verifier', 'orders-input']) assert.deepEqual(env(s).ONCEFLOW_BOOTSTRAP?.split(',').sort(), internal.sort(), `${s} bootstraps from every broker`);
  assert.equal(env('schema-registry').SCHEMA_REGISTRY_KAFKASTORE_BOOTSTRAP_SERVERS?.split(',').sort().join(), internal.sort().join());

  const registry = new URL(env('worker').ONCEFLOW_REGISTRY_URL ?? '');
  assert.equal(registry.hostname, 'schema-registry');
  assert.equal(new URL(env('schema-registry').SCHEMA_REGISTRY_LISTENERS ?? '').port, registry.port);
  assert.ok(services['schema-registry']?.ports?.includes(`${registry.port}:${registry.port}`));

  const healthPort = env('worker').ONCEFLOW_HTTP_PORT;
  assert.ok(services.worker?.expose?.includes(String(healthPort)));
  assert.match(services.worker?.healthcheck?.test?.join(' ') ?? '', new RegExp(`127\\.0\\.0\\.1:${healthPort}/readyz`));
});

test('brokers give replication factor 3 and min ISR 2, transaction log included', () => {
  for (const b of brokers) {
    const e = env(b);
    assert.equal(e.KAFKA_PROCESS_ROLES, 'broker,controller');
    assert.equal(e.KAFKA_DEFAULT_REPLICATION_FACTOR, '3');
    assert.equal(e.KAFKA_MIN_INSYNC_REPLICAS, '2');
    assert.equal(e.KAFKA_OFFSETS_TOPIC_REPLICATION_FACTOR, '3');
    assert.equal(e.KAFKA_TRANSACTION_STATE_LOG_REPLICATION_FACTOR, '3');
    assert.equal(e.KAFKA_TRANSACTION_STATE_LOG_MIN_ISR, '2');
    assert.equal(e.CLUSTER_ID, env('kafka-1').CLUSTER_ID);
  }
  const init = services['kafka-init']?.command?.join('\n') ?? '';
  assert.match(init, /--replication-factor 3/);
  assert.match(init, /min\.insync\.replicas=2/);
});

test("the topics compose creates and verifies are topology/orders.ts's defaults", () => {
  const init = services['kafka-init']?.command?.join('\n') ?? '';
  const created = /for t in ([^;]+);/.exec(init)?.[1]?.trim().split(/\s+/) ?? [];
  assert.deepEqual(created.sort(), [ORDERS_DEFAULTS.input, ORDERS_DEFAULTS.output].sort());
  assert.equal(env('worker').ONCEFLOW_APP_ID, ORDERS_DEFAULTS.appId);
  const verify = services.verifier?.command ?? [];
  assert.equal(verify[verify.indexOf('--input') + 1], ORDERS_DEFAULTS.input);
  assert.equal(verify[verify.indexOf('--output') + 1], ORDERS_DEFAULTS.output);
  assert.equal(verify[verify.indexOf('--app-id') + 1], ORDERS_DEFAULTS.appId);
  assert.match(services['orders-input']?.command?.join('\n') ?? '', new RegExp(`'${ORDERS_DEFAULTS.input}'`));
});

test('the Dockerfile builds from node:20 with the Debian dev libraries and a dynamically linked librdkafka', () => {
  const docker = readFileSync(join(root, 'Dockerfile'), 'utf8');
  assert.match(docker, /^FROM node:20/m);
  for (const lib of ['libssl-dev', 'libsasl2-dev', 'zlib1g-dev', 'libzstd-dev', 'liblz4-dev', 'libcurl4-openssl-dev']) assert.ok(docker.includes(lib), lib);
  assert.match(docker, /ENV CKJS_LINKING=dynamic/);
  assert.match(docker, /npm ci/);
  const ignore = readFileSync(join(root, '.dockerignore'), 'utf8').split('\n');
  assert.ok(ignore.includes('node_modules'), 'the host build of the native client must not be copied in');
});
