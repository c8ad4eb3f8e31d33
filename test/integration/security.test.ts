import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, test } from 'node:test';
import { parseAcls, type AclEntry } from '../../src/kafka/acls.ts';
import type { ClientOptions } from '../../src/kafka/admin.ts';
import { isKafkaError } from '../../src/kafka/clients.ts';
import { projectRoot } from '../../src/kafka/paths.ts';
import { readTopic } from '../../src/kafka/read-topic.ts';
import { startLocalCluster, stopLocalCluster } from '../../src/kafka/local-cluster.ts';
import type { LocalClusterInfo } from '../../src/kafka/cluster-info.ts';
import { adminClientOptions, applySecurity, newPassword, scramClientOptions } from '../../src/kafka/security.ts';
import { TestRun } from '../support/runs.ts';

/**
 * The CLI as a user runs it next to `dev up --secure`: the cluster found through ONCEFLOW_HOME, and no
 * bootstrap nor Kafka option in the environment (the test harness sets ONCEFLOW_BOOTSTRAP for its own broker).
 */
function cliOnDevCluster(args: readonly string[], input?: string): { status: number | null; stdout: string; stderr: string } {
  const env = Object.fromEntries(Object.entries(process.env).filter(([name]) => name !== 'ONCEFLOW_BOOTSTRAP' && name !== 'ONCEFLOW_REGISTRY_URL' && !name.startsWith('ONCEFLOW_KAFKA_')));
  return spawnSync(process.execPath, ['--import', 'tsx', 'src/cli/main.ts', ...args], { cwd: projectRoot(), env: { ...env, ONCEFLOW_HOME: dir }, encoding: 'utf8', ...(input === undefined ? {} : { input }), timeout: 120_000 });
}

/** librdkafka options as the worker reads them from its environment (ONCEFLOW_KAFKA_<NAME>). */
function asWorkerEnv(options: ClientOptions): Record<string, string> {
  return Object.fromEntries(Object.entries(options).map(([k, v]) => [`ONCEFLOW_KAFKA_${k.toUpperCase().replace(/\./g, '_')}`, String(v)]));
}

/** The ACLs exactly as `onceflow acls` prints them for a run, read back by the parser the apply helper uses. */
function aclsFromCli(run: TestRun, principal: string): AclEntry[] {
  const cli = spawnSync(process.execPath, ['--import', 'tsx', 'src/cli/main.ts', 'acls', run.pipeline.file, '--principal', principal, '--app-id', run.appId], {
    cwd: projectRoot(),
    env: { ...process.env, ...run.env },
    encoding: 'utf8',
  });
  assert.equal(cli.status, 0, cli.stderr);
  return parseAcls(cli.stdout);
}

const dir = mkdtempSync(join(tmpdir(), 'onceflow-secure-'));
const users = { worker: newPassword(), notxn: newPassword(), reader: newPassword(), nobody: newPassword() };
let cluster: LocalClusterInfo | undefined;
let exact: TestRun;
let noTxn: TestRun;
let noAcls: TestRun;
const runs: TestRun[] = [];

function userEnv(name: keyof typeof users, password = users[name]): Record<string, string> {
  return asWorkerEnv(scramClientOptions(cluster!.secure!.caLocation, name, password));
}

function assertNoSecret(text: string): void {
  for (const password of Object.values(users)) assert.ok(!text.includes(password), 'a password appears in the output');
}

before(async () => {
  cluster = await startLocalCluster({ dir, secure: true, withRegistry: false });
  const secure = cluster.secure!;
  const admin = { bootstrap: cluster.bootstrap, clientOptions: adminClientOptions(secure) };
  exact = new TestRun('orders', 2, {}, admin);
  noTxn = new TestRun('orders', 1, {}, admin);
  noAcls = new TestRun('orders', 1, {}, admin);
  runs.push(exact, noTxn, noAcls);
  await Promise.all([exact.createTopics(), noTxn.createTopics(), noAcls.createTopics()]);
  const acls = [
    ...aclsFromCli(exact, 'User:worker'),
    ...aclsFromCli(noTxn, 'User:notxn').filter((a) => a.resourceType !== 'TRANSACTIONAL_ID'),
    // Sees the output topic (DESCRIBE) but may not READ it; READ on the input shows its credentials work.
    { principal: 'User:reader', operation: 'READ', resourceType: 'TOPIC', patternType: 'LITERAL', name: exact.input },
    { principal: 'User:reader', operation: 'DESCRIBE', resourceType: 'TOPIC', patternType: 'LITERAL', name: exact.output },
    // readTopic's throw-away group is never joined, but librdkafka looks up its coordinator.
    { principal: 'User:reader', operation: 'DESCRIBE', resourceType: 'GROUP', patternType: 'PREFIXED', name: 'onceflow-reader-' },
  ] satisfies AclEntry[];
  await applySecurity(cluster.bootstrap, secure, { users: Object.entries(users).map(([name, password]) => ({ name, password })), acls });
});

after(async () => {
  await Promise.all(runs.map((r) => r.stopAll()));
  await stopLocalCluster(dir);
  rmSync(dir, { recursive: true, force: true });
});

describe('a secured cluster (SASL_SSL, SCRAM-SHA-512, StandardAuthorizer)', () => {
  test('a worker granted only the ACLs `onceflow acls` prints runs the orders topology exactly once', async () => {
    await exact.produce(2_000, 21);
    const first = exact.startWorker('a', { env: userEnv('worker') });
    await first.waitFor((e) => e.type === 'assigned', 90_000, 'assignment');
    await exact.caughtUp();
    assert.equal((await first.stop()).code, 0, first.stderr.join('\n'));
    // The restart restores its stores from the changelogs it wrote: reading them needs no further grant.
    await exact.produce(1_000, 22);
    const second = exact.startWorker('a', { env: userEnv('worker') });
    const restored = await second.waitFor((e) => e.type === 'restored', 90_000, 'restore');
    assert.ok(Number(restored.records) > 0, 'the restart replayed changelog records');
    await exact.caughtUp();
    const report = await exact.verify();
    assert.deepEqual({ duplicates: report.duplicates, lost: report.lost, mismatches: report.aggregateMismatches }, { duplicates: 0, lost: 0, mismatches: 0 }, JSON.stringify(report.examples));
    assert.ok(report.outputRecords > 0);
    assert.equal((await second.stop()).code, 0, second.stderr.join('\n'));
    for (const w of [first, second]) assertNoSecret(w.stderr.join('\n') + JSON.stringify(w.events));
  });

  test('a principal without the transactional-id grant fails at start-up naming the missing permission', async () => {
    const w = noTxn.startWorker('a', { env: userEnv('notxn') });
    const exit = await w.exit();
    assert.notEqual(exit.code, 0);
    const stderr = w.stderr.join('\n');
    assert.match(stderr, /\[TRANSACTIONAL_ID_NOT_AUTHORIZED\]/);
    assert.ok(stderr.includes(`WRITE on TransactionalId prefix ${noTxn.appId}-`), stderr);
    assertNoSecret(stderr);
  });

  test('a principal without READ on the output topic cannot read it', async () => {
    const reader = scramClientOptions(cluster!.secure!.caLocation, 'reader', users.reader);
    const input = await readTopic(cluster!.bootstrap, exact.input, { clientOptions: reader });
    assert.equal(input.length, 3_000, 'the same credentials read the input it may read');
    const denied = await readTopic(cluster!.bootstrap, exact.output, { clientOptions: reader }).then(
      () => undefined,
      (e: unknown) => e,
    );
    assert.ok(isKafkaError(denied), `expected a Kafka error, got ${String(denied)}`);
    assert.match(denied.message, /authoriz/i);
  });

  test('a wrong password is an authentication error naming the user, not a hang', async () => {
    const wrong = `not-${users.worker}`;
    const w = exact.startWorker('b', { env: userEnv('worker', wrong) });
    const exit = await w.exitWithin(60_000);
    assert.ok(exit, 'the worker exits on its own');
    assert.notEqual(exit.code, 0);
    const stderr = w.stderr.join('\n');
    assert.match(stderr, /\[AUTHENTICATION_FAILED\]/);
    assert.match(stderr, /user "worker"/);
    assert.ok(!stderr.includes(wrong), 'the wrong password is not echoed');
    assertNoSecret(stderr);
  });

  test('topics, produce and consume use the dev cluster\'s TLS and SCRAM settings from dev.json, given no bootstrap', () => {
    const created = cliOnDevCluster(['topics', 'create', 'secure-tools', '--partitions', '2']);
    assert.equal(created.status, 0, created.stderr);
    assert.match(created.stdout, /created: secure-tools \(2 partitions\)/);
    const produced = cliOnDevCluster(['produce', 'secure-tools'], '{"n":1}\n{"n":2}\n{"n":3}\n');
    assert.equal(produced.status, 0, produced.stderr);
    assert.match(produced.stdout, /produced 3 record\(s\) to secure-tools/);
    const consumed = cliOnDevCluster(['consume', 'secure-tools', '--from-beginning', '--max', '3']);
    assert.equal(consumed.status, 0, consumed.stderr);
    const values = consumed.stdout.trim().split('\n').map((line) => (JSON.parse(line) as { value: { n: number } }).value.n);
    assert.deepEqual(values.sort(), [1, 2, 3]);
    const described = cliOnDevCluster(['topics', 'describe', 'secure-tools', '--json']);
    assert.equal(described.status, 0, described.stderr);
    assertNoSecret(created.stdout + created.stderr + produced.stdout + produced.stderr + consumed.stderr);
  });

  test('--kafka options, as run takes them, override the dev cluster\'s key by key', () => {
    const asReader = cliOnDevCluster(['consume', exact.input, '--from-beginning', '--max', '1', '--kafka', 'sasl.username=reader', '--kafka', `sasl.password=${users.reader}`]);
    assert.equal(asReader.status, 0, asReader.stderr);
    const wrong = cliOnDevCluster(['topics', 'list', '--kafka', 'sasl.username=reader', '--kafka', 'sasl.password=not-it']);
    assert.notEqual(wrong.status, 0);
    assert.match(wrong.stderr, /\[AUTHENTICATION_FAILED\].*user "reader"/);
    assertNoSecret(asReader.stderr + wrong.stderr);
  });

  test('a plaintext client is told the listener asks for SASL_SSL and which options to set, not BROKER_UNREACHABLE', () => {
    const plain = cliOnDevCluster(['topics', 'list', '--bootstrap', cluster!.bootstrap]);
    assert.notEqual(plain.status, 0);
    assert.match(plain.stderr, /\[LISTENER_PROTOCOL_MISMATCH\]/);
    assert.match(plain.stderr, /asks for SASL_SSL/);
    assert.match(plain.stderr, /speaks PLAINTEXT/);
    assert.match(plain.stderr, /security\.protocol=SASL_SSL, sasl\.mechanisms=SCRAM-SHA-512/);
    assert.match(plain.stderr, /ssl\.ca\.location=/);
    assert.doesNotMatch(plain.stderr, /BROKER_UNREACHABLE/);
  });

  test('a worker whose principal has no ACLs stops with an authorization error naming it and the ACL to add, not TOPIC_MISSING', async () => {
    const w = noAcls.startWorker('a', { env: userEnv('nobody') });
    const exit = await w.exitWithin(90_000);
    assert.ok(exit, 'the worker exits on its own');
    assert.notEqual(exit.code, 0);
    const stderr = w.stderr.join('\n');
    assert.match(stderr, /\[TOPIC_NOT_AUTHORIZED\]/);
    assert.ok(stderr.includes(`User:nobody may not DESCRIBE source topic ${noAcls.input}`), stderr);
    assert.ok(stderr.includes(`User:nobody READ TOPIC LITERAL ${noAcls.input}`), stderr);
    assert.match(stderr, /onceflow acls <topology> --principal User:nobody/);
    assert.doesNotMatch(stderr, /TOPIC_MISSING/);
    assertNoSecret(stderr);
  });
});
