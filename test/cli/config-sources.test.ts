import assert from 'node:assert/strict';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { test } from 'node:test';
import {
  CONFIG_ENV,
  ConfigSourceError,
  isKnownEnvVar,
  kafkaOptionFromEnv,
  loadWorkerConfig,
  ONCEFLOW_ENV_VARS,
  resolveConfigSources,
  resolveRuntimeOptions,
  resolveWorkerConfigInput,
} from '../../src/cli/config-sources.ts';
import { ConfigError, workerConfigSchema } from '../../src/runtime/base/config.ts';

const dir = mkdtempSync(join(tmpdir(), 'onceflow-config-'));
function file(name: string, text: string): string {
  const path = join(dir, name);
  writeFileSync(path, text);
  return path;
}

test('every scalar schema field has its env var, SCREAMING_SNAKE of its name', () => {
  // The sections (kafka options, tracing) are mappings, read from their own variables.
  const fields = Object.keys(workerConfigSchema.shape).filter((f) => f !== 'kafka' && f !== 'tracing');
  assert.deepEqual(Object.keys(CONFIG_ENV).sort(), fields.sort());
  assert.equal(CONFIG_ENV.bootstrap, 'ONCEFLOW_BOOTSTRAP');
  assert.equal(CONFIG_ENV.appId, 'ONCEFLOW_APP_ID');
  assert.equal(CONFIG_ENV.instanceId, 'ONCEFLOW_INSTANCE_ID');
  assert.equal(CONFIG_ENV.guarantee, 'ONCEFLOW_GUARANTEE');
  assert.equal(CONFIG_ENV.commitIntervalMs, 'ONCEFLOW_COMMIT_INTERVAL_MS');
  assert.equal(CONFIG_ENV.transactionTimeoutMs, 'ONCEFLOW_TRANSACTION_TIMEOUT_MS');
  assert.equal(CONFIG_ENV.registryUrl, 'ONCEFLOW_REGISTRY_URL');
  assert.ok(ONCEFLOW_ENV_VARS.includes('ONCEFLOW_MAX_RECORDS_PER_TRANSACTION'));
  assert.ok(isKnownEnvVar('ONCEFLOW_KAFKA_SASL_MECHANISM'));
  assert.ok(!isKnownEnvVar('ONCEFLOW_APPID'));
  assert.ok(!isKnownEnvVar('ONCEFLOW_KAFKA_'));
});

test('ONCEFLOW_KAFKA_<NAME> maps _ to . and __ to a literal _', () => {
  assert.equal(kafkaOptionFromEnv('ONCEFLOW_KAFKA_SECURITY_PROTOCOL'), 'security.protocol');
  assert.equal(kafkaOptionFromEnv('ONCEFLOW_KAFKA_SASL_OAUTHBEARER_CLIENT_ID'), 'sasl.oauthbearer.client.id');
  assert.equal(kafkaOptionFromEnv('ONCEFLOW_KAFKA_SOME__ODD_NAME'), 'some_odd.name');
});

test('precedence is flags > env > file > defaults, field by field and kafka key by key', () => {
  const path = file(
    'c.yaml',
    ['bootstrap: file-host:9092', 'appId: from-file', 'commitIntervalMs: 200', 'sessionTimeoutMs: 12000', 'kafka:', '  linger.ms: 7', '  security.protocol: PLAINTEXT', '  acks: "1"'].join('\n'),
  );
  const { input, origin, unknownEnv } = resolveConfigSources({
    file: path,
    env: { ONCEFLOW_APP_ID: 'from-env', ONCEFLOW_COMMIT_INTERVAL_MS: '300', ONCEFLOW_KAFKA_SECURITY_PROTOCOL: 'SASL_SSL', ONCEFLOW_KAFKA_ACKS: 'all', ONCEFLOW_APID: 'typo', PATH: '/bin' },
    flags: { commitIntervalMs: '50', kafka: ['acks=-1', 'client.rack=eu-1a'] },
  });
  assert.deepEqual(input, {
    bootstrap: 'file-host:9092',
    appId: 'from-env',
    commitIntervalMs: 50,
    sessionTimeoutMs: 12000,
    kafka: { 'linger.ms': 7, 'security.protocol': 'SASL_SSL', acks: '-1', 'client.rack': 'eu-1a' },
  });
  assert.equal(origin.bootstrap, 'file');
  assert.equal(origin.appId, 'env');
  assert.equal(origin.commitIntervalMs, 'flag');
  assert.equal(origin['kafka.security.protocol'], 'env');
  assert.equal(origin['kafka.linger.ms'], 'file');
  assert.equal(origin['kafka.acks'], 'flag');
  assert.deepEqual(unknownEnv, ['ONCEFLOW_APID']);

  const config = loadWorkerConfig({ file: path, env: { ONCEFLOW_APP_ID: 'from-env' } });
  assert.equal(config.appId, 'from-env');
  assert.equal(config.guarantee, 'exactly_once', 'unset fields take the schema default');
  assert.equal(config.transactionTimeoutMs, 10_000);
});

test('JSON files work the same, numbers and booleans from env are parsed', () => {
  const path = file('c.json', JSON.stringify({ bootstrap: 'j:9092', appId: 'json-app', kafka: { 'linger.ms': 3 } }));
  const config = loadWorkerConfig({
    file: path,
    env: { ONCEFLOW_TRANSACTION_TIMEOUT_MS: '20000', ONCEFLOW_MAX_POLL_INTERVAL_MS: ' 400000 ', ONCEFLOW_UNSAFE_COMMIT_OFFSETS_OUTSIDE_TRANSACTION: 'true', ONCEFLOW_GUARANTEE: 'at_least_once' },
  });
  assert.equal(config.appId, 'json-app');
  assert.equal(config.transactionTimeoutMs, 20_000);
  assert.equal(config.maxPollIntervalMs, 400_000);
  assert.equal(config.unsafeCommitOffsetsOutsideTransaction, true);
  assert.equal(config.guarantee, 'at_least_once');
  assert.deepEqual(config.kafka, { 'linger.ms': 3 });
  // The older name the test harness sets keeps working.
  assert.equal(resolveWorkerConfigInput({ env: { ONCEFLOW_UNSAFE_OFFSETS_OUTSIDE_TXN: '1' } }).unsafeCommitOffsetsOutsideTransaction, true);
});

test('invalid values fail in parseWorkerConfig naming the field and what it accepts', () => {
  const base = { ONCEFLOW_BOOTSTRAP: 'b:9092', ONCEFLOW_APP_ID: 'app' };
  const issues = (env: Record<string, string>, flags = {}) => {
    try {
      loadWorkerConfig({ env: { ...base, ...env }, flags });
    } catch (e) {
      assert.ok(e instanceof ConfigError);
      assert.equal(e.code, 'CONFIG_INVALID');
      return e.message;
    }
    assert.fail('expected a ConfigError');
  };
  assert.match(issues({ ONCEFLOW_GUARANTEE: 'exactly-once' }), /guarantee .*"exactly_once"\|"at_least_once"/);
  assert.match(issues({ ONCEFLOW_COMMIT_INTERVAL_MS: 'fast' }), /commitIntervalMs .*expected number/);
  assert.match(issues({}, { commitIntervalMs: '0' }), /commitIntervalMs .*>=1/);
  assert.match(issues({ ONCEFLOW_COMMIT_INTERVAL_MS: '20000' }), /commitIntervalMs \(20000\) must be below transactionTimeoutMs \(10000\)/);
  assert.match(issues({ ONCEFLOW_KAFKA_GROUP_ID: 'other' }), /kafka\.group\.id is set by onceflow itself/);
  assert.match(issues({ ONCEFLOW_CACHE_MAX_RECORDS: '-1' }), /cacheMaxRecords .*>=0/);
  assert.match(issues({}, { cacheMaxRecords: '2.5' }), /cacheMaxRecords .*int/);
  const defaults = loadWorkerConfig({ env: base });
  assert.equal(defaults.cacheMaxBytes, 10 * 1024 * 1024, 'the record cache is on by default, sized in bytes as in Kafka Streams');
  assert.equal(defaults.cacheMaxRecords, undefined, 'no record-count bound unless asked for');
  assert.match(issues({ ONCEFLOW_CACHE_MAX_BYTES: '-5' }), /cacheMaxBytes .*>=0/);
  assert.equal(loadWorkerConfig({ env: base, flags: { cacheMaxRecords: '10000' } }).cacheMaxRecords, 10_000);
  const fileWithTypo = file('typo.yaml', 'bootstrap: b:9092\nappId: a\ncommitIntervallMs: 5\n');
  assert.throws(() => loadWorkerConfig({ file: fileWithTypo, env: {} }), (e: unknown) => e instanceof ConfigError && /commitIntervallMs/.test(e.message));
});

test('file and flag errors are ConfigSourceErrors that never quote the text they reject', () => {
  const secret = 'p@ss-w0rd-in-file';
  const broken = file('broken.yaml', `bootstrap: b:9092\nkafka:\n  sasl.password: "${secret}\n  other: [1, 2\n`);
  assert.throws(
    () => resolveWorkerConfigInput({ file: broken, env: {} }),
    (e: unknown) => e instanceof ConfigSourceError && e.code === 'CONFIG_FILE_INVALID' && /line \d+, column \d+/.test(e.message) && !e.message.includes(secret),
  );
  const brokenJson = file('broken.json', `{"kafka": {"sasl.password": "${secret}",}`);
  assert.throws(
    () => resolveWorkerConfigInput({ file: brokenJson, env: {} }),
    (e: unknown) => e instanceof ConfigSourceError && e.code === 'CONFIG_FILE_INVALID' && /not valid JSON/.test(e.message) && !e.message.includes(secret),
  );
  assert.throws(() => resolveWorkerConfigInput({ file: file('list.yaml', '- a\n- b\n'), env: {} }), (e: unknown) => e instanceof ConfigSourceError && /mapping/.test(e.message));
  assert.throws(() => resolveWorkerConfigInput({ file: join(dir, 'missing.yaml'), env: {} }), (e: unknown) => e instanceof ConfigSourceError && e.code === 'CONFIG_FILE_UNREADABLE' && /ENOENT/.test(e.message));
  assert.throws(
    () => resolveWorkerConfigInput({ env: {}, flags: { kafka: [secret] } }),
    (e: unknown) => e instanceof ConfigSourceError && e.code === 'CONFIG_FLAG_INVALID' && !e.message.includes(secret),
  );
});

test('runtime options: port, DLQ readiness threshold, log level and format from flags or env', () => {
  assert.deepEqual(resolveRuntimeOptions({}), { httpPort: undefined, dlqThreshold: { count: 100, intervalMs: 60_000 }, logLevel: 'info', logFormat: 'json' });
  assert.equal(resolveRuntimeOptions({}, {}, true).logFormat, 'pretty');
  const r = resolveRuntimeOptions({ ONCEFLOW_HTTP_PORT: '9464', ONCEFLOW_DLQ_READY_THRESHOLD: '5', ONCEFLOW_LOG_LEVEL: 'debug', ONCEFLOW_LOG_FORMAT: 'pretty' }, { dlqReadyIntervalMs: '30000', logFormat: 'json' });
  assert.deepEqual(r, { httpPort: 9464, dlqThreshold: { count: 5, intervalMs: 30_000 }, logLevel: 'debug', logFormat: 'json' });
  assert.throws(() => resolveRuntimeOptions({ ONCEFLOW_HTTP_PORT: 'http' }), (e: unknown) => e instanceof ConfigSourceError && e.code === 'CONFIG_ENV_INVALID' && /ONCEFLOW_HTTP_PORT must be an integer from 0 to 65535/.test(e.message));
  assert.throws(() => resolveRuntimeOptions({}, { logLevel: 'loud' }), (e: unknown) => e instanceof ConfigSourceError && /--log-level must be one of trace \| debug/.test(e.message));
});

test("a secure dev cluster's client options apply only with its bootstrap, below every other source key by key", () => {
  const devCluster = { bootstrap: '127.0.0.1:39091', clientOptions: { 'security.protocol': 'SASL_SSL', 'sasl.username': 'admin', 'sasl.password': 'secret' } };
  const fromDev = resolveConfigSources({ env: {}, flags: { kafka: ['sasl.username=reader'] }, devCluster });
  assert.equal(fromDev.input.bootstrap, '127.0.0.1:39091');
  assert.deepEqual(fromDev.input.kafka, { 'security.protocol': 'SASL_SSL', 'sasl.username': 'reader', 'sasl.password': 'secret' });
  assert.deepEqual([fromDev.origin['kafka.sasl.username'], fromDev.origin['kafka.sasl.password']], ['flag', 'dev']);
  const elsewhere = resolveConfigSources({ env: { ONCEFLOW_BOOTSTRAP: 'kafka:9092' }, devCluster });
  assert.equal(elsewhere.input.bootstrap, 'kafka:9092');
  assert.equal(elsewhere.input.kafka, undefined);
});
