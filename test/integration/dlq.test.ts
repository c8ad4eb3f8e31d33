import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, test } from 'node:test';
import { promisify } from 'node:util';
import { readTopic } from '../../src/kafka/read-topic.ts';
import { projectRoot } from '../../src/kafka/paths.ts';
import { produceAll } from '../../src/verify/orders-input.ts';
import { waitCaughtUp } from '../../src/verify/progress.ts';
import { eventually, WorkerProcess } from '../../src/verify/worker-process.ts';
import { createTopics, testCluster, uniqueName } from '../support/cluster.ts';
import { TestRun } from '../support/runs.ts';

const run = promisify(execFile);
const workers: WorkerProcess[] = [];
const runs: TestRun[] = [];
after(() => Promise.all([...workers.map((w) => w.stop()), ...runs.map((r) => r.stopAll())]));

async function onceflow(...args: string[]): Promise<string> {
  const { stdout } = await run(process.execPath, ['--import', 'tsx', 'src/cli/main.ts', ...args], { cwd: projectRoot(), env: process.env });
  return stdout;
}

test('poison records in the middle of partitions end in the DLQ exactly once; dlq list shows them and dlq replay publishes them once', async () => {
  const r = new TestRun('orders', 3);
  runs.push(r);
  await r.createTopics();
  await r.produce(3_000, 31, 3);
  r.startWorker('a');
  await r.caughtUp();
  const report = await r.verify();
  assert.deepEqual({ duplicates: report.duplicates, lost: report.lost, mismatches: report.aggregateMismatches, dlq: report.dlqRecords }, { duplicates: 0, lost: 0, mismatches: 0, dlq: 3 });

  const listed = JSON.parse(await onceflow('dlq', 'list', '--app-id', r.appId, '--bootstrap', r.bootstrap, '--json')) as { source: string; code: string; key: string; stage: string }[];
  assert.equal(listed.length, 3);
  assert.deepEqual(listed.map((e) => e.code), ['JSON_INVALID', 'JSON_INVALID', 'JSON_INVALID']);
  assert.deepEqual(listed.map((e) => e.key).sort(), ['poison-0', 'poison-1', 'poison-2']);
  const input = await readTopic(r.bootstrap, r.input);
  for (const e of listed) {
    const [topic, partition, offset] = e.source.split('/');
    const original = input.find((x) => x.topic === topic && x.partition === Number(partition) && x.offset === Number(offset));
    assert.equal(original?.key?.toString(), e.key, 'the source coordinates point at the poison record');
  }
  console.log(`# dlq list:\n${(await onceflow('dlq', 'list', '--app-id', r.appId, '--bootstrap', r.bootstrap)).replace(/^/gm, '# ')}`);

  const target = uniqueName('replayed');
  await createTopics(r.bootstrap, [{ name: target, partitions: 1 }]);
  assert.match(await onceflow('dlq', 'replay', '--app-id', r.appId, '--bootstrap', r.bootstrap, '--where', 'code=JSON_INVALID', '--to', target), /replayed 3 record/);
  assert.match(await onceflow('dlq', 'replay', '--app-id', r.appId, '--bootstrap', r.bootstrap, '--to', target), /replayed 0 record\(s\), skipped 3/);
  const replayed = await readTopic(r.bootstrap, target);
  assert.deepEqual(replayed.map((x) => x.key?.toString()).sort(), ['poison-0', 'poison-1', 'poison-2']);
  for (const x of replayed) {
    const original = input.find((i) => i.key?.toString() === x.key?.toString());
    assert.ok(original?.value?.equals(x.value!), 'the original value is replayed byte for byte');
  }
});

async function flakyRun(mode: 'once' | 'always', attemptsFile: string, names: { input: string; output: string; appId: string }, instance = 'a'): Promise<WorkerProcess> {
  const { bootstrap } = testCluster();
  const w = new WorkerProcess(instance, 'test/fixtures/flaky.ts', ['--app-id', names.appId, '--instance-id', instance], {
    ONCEFLOW_BOOTSTRAP: bootstrap,
    FLAKY_MODE: mode,
    FLAKY_ATTEMPTS_FILE: attemptsFile,
    FLAKY_INPUT: names.input,
    FLAKY_OUTPUT: names.output,
  });
  workers.push(w);
  return w;
}

test('a transient failure that succeeds on the 2nd attempt gives exactly one output per record, no dead letter', async () => {
  const { bootstrap } = testCluster();
  const names = { input: uniqueName('flaky-in'), output: uniqueName('flaky-out'), appId: uniqueName('flaky') };
  await createTopics(bootstrap, [{ name: names.input, partitions: 2 }, { name: names.output, partitions: 2 }]);
  await produceAll(bootstrap, names.input, Array.from({ length: 5 }, (_, i) => ({ key: `k${i}`, value: `v${i}` })));
  const attempts = join(mkdtempSync(join(tmpdir(), 'flaky-')), 'attempts');
  await flakyRun('once', attempts, names);
  await waitCaughtUp({ bootstrap, groupId: names.appId, plainTopics: [names.input] });
  const out = await readTopic(bootstrap, names.output);
  assert.deepEqual(out.map((r) => r.value?.toString()).sort(), ['v0!', 'v1!', 'v2!', 'v3!', 'v4!']);
  assert.equal(readFileSync(attempts, 'utf8').trim().split('\n').length, 10, 'each record took two attempts');
  const topics = await import('../../src/kafka/admin.ts').then((m) => m.withAdmin(bootstrap, (a) => a.listTopics()));
  const dlq = topics.includes(`${names.appId}-dlq`) ? await readTopic(bootstrap, `${names.appId}-dlq`) : [];
  assert.equal(dlq.length, 0);
});

test('a crash during retries neither loses the record nor dead-letters it twice', async () => {
  const { bootstrap } = testCluster();
  const names = { input: uniqueName('flaky-in'), output: uniqueName('flaky-out'), appId: uniqueName('flaky') };
  await createTopics(bootstrap, [{ name: names.input, partitions: 1 }, { name: names.output, partitions: 1 }]);
  await produceAll(bootstrap, names.input, [{ key: 'k', value: 'poisoned-by-downstream' }]);
  const attempts = join(mkdtempSync(join(tmpdir(), 'flaky-')), 'attempts');
  const first = await flakyRun('always', attempts, names);
  // The record failed once and sits in backoff inside an open transaction: kill the worker there.
  await eventually(() => existsSync(attempts), 60_000, 'the first attempt');
  first.kill('SIGKILL');
  await first.exit();
  const second = await flakyRun('always', attempts, names);
  await second.waitFor((e) => e.type === 'dead-lettered', 60_000, 'the dead letter');
  await waitCaughtUp({ bootstrap, groupId: names.appId, plainTopics: [names.input] });
  // A third incarnation must not dead-letter it again: the offset moved on in the same transaction.
  await second.stop();
  const third = await flakyRun('always', attempts, names);
  await third.waitFor((e) => e.type === 'assigned', 60_000, 'assignment');
  await waitCaughtUp({ bootstrap, groupId: names.appId, plainTopics: [names.input] });
  const dlq = await readTopic(bootstrap, `${names.appId}-dlq`);
  assert.equal(dlq.length, 1, 'dead-lettered exactly once');
  assert.equal(dlq[0]?.headers.find((h) => h.key === 'onceflow.error.attempts')?.value.toString(), '3');
  assert.equal((await readTopic(bootstrap, names.output)).length, 0);
});

test('a replayed record that fails again updates its dead letter (attempts, failures) instead of adding one; --dry-run publishes nothing', async () => {
  const { bootstrap } = testCluster();
  const names = { input: uniqueName('flaky-in'), output: uniqueName('flaky-out'), appId: uniqueName('flaky') };
  await createTopics(bootstrap, [{ name: names.input, partitions: 1 }, { name: names.output, partitions: 1 }]);
  await produceAll(bootstrap, names.input, [{ key: 'k', value: 'always-fails' }]);
  const attempts = join(mkdtempSync(join(tmpdir(), 'flaky-')), 'attempts');
  const worker = await flakyRun('always', attempts, names);
  const list = async () => JSON.parse(await onceflow('dlq', 'list', '--app-id', names.appId, '--bootstrap', bootstrap, '--json')) as { dlq: string; attempts: number; failures: number; time: string; key: string }[];
  const deadLettered = async (n: number) => {
    await eventually(() => worker.events.filter((e) => e.type === 'dead-lettered').length >= n, 90_000, `dead letter ${n}`);
    await waitCaughtUp({ bootstrap, groupId: names.appId, plainTopics: [names.input] });
  };
  await deadLettered(1);
  const first = await list();
  assert.equal(first.length, 1);
  assert.match(first[0]!.time, /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/, 'an ISO time, not epoch ms');

  assert.match(await onceflow('dlq', 'replay', '--app-id', names.appId, '--bootstrap', bootstrap, '--dry-run'), /^would replay 1 record\(s\): 0\/0/);
  assert.equal((await readTopic(bootstrap, names.input)).length, 1, 'a dry run publishes nothing');

  for (const failures of [2, 3]) {
    assert.match(await onceflow('dlq', 'replay', '--app-id', names.appId, '--bootstrap', bootstrap), /^replayed 1 record/);
    await deadLettered(failures);
    const entries = await list();
    assert.equal(entries.length, 1, `one dead letter after ${failures - 1} failed replay(s)`);
    assert.deepEqual({ failures: entries[0]!.failures, attempts: entries[0]!.attempts, key: entries[0]!.key }, { failures, attempts: 3 * failures, key: 'k' });
  }
});
