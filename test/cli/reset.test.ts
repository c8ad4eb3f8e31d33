import assert from 'node:assert/strict';
import { execFile, spawn } from 'node:child_process';
import { existsSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, test } from 'node:test';
import { compile } from '../../src/graph/compile.ts';
import { withAdmin } from '../../src/kafka/admin.ts';
import { GroupOffsets } from '../../src/kafka/group-offsets.ts';
import { projectRoot } from '../../src/kafka/paths.ts';
import { produceRecords } from '../../src/kafka/produce-records.ts';
import { readTopic } from '../../src/kafka/read-topic.ts';
import { eventually } from '../../src/verify/worker-process.ts';
import { wordCountTopology } from '../../topology/word-count.ts';
import { createTopics, testCluster, uniqueName } from '../support/cluster.ts';

const { bootstrap, registryUrl } = testCluster();
const appId = uniqueName('reset-app');
const input = uniqueName('reset-lines');
const output = uniqueName('reset-counts');
const home = mkdtempSync(join(tmpdir(), 'onceflow-reset-'));
const stateDir = join(home, 'state');
const env: NodeJS.ProcessEnv = {
  PATH: process.env.PATH,
  HOME: process.env.HOME,
  ONCEFLOW_HOME: home,
  ONCEFLOW_BOOTSTRAP: bootstrap,
  ONCEFLOW_REGISTRY_URL: registryUrl,
  ONCEFLOW_APP_ID: appId,
  ONCEFLOW_WORDS_INPUT: input,
  ONCEFLOW_WORDS_OUTPUT: output,
  ONCEFLOW_STATE_DIR: stateDir,
  ONCEFLOW_STATE_STORE: 'persistent',
  ONCEFLOW_LOG_LEVEL: 'warn',
};
after(() => rmSync(home, { recursive: true, force: true }));

const internal = compile(wordCountTopology({ appId, input, output })).topics.filter((t) => t.internal && (t.kind === 'repartition' || t.kind === 'changelog')).map((t) => t.name);

function onceflow(...args: string[]): Promise<{ code: number; stdout: string; stderr: string }> {
  return new Promise((resolve) => {
    execFile(process.execPath, ['--import', 'tsx', 'src/cli/main.ts', ...args], { cwd: projectRoot(), env, timeout: 180_000 }, (error, stdout, stderr) => {
      resolve({ code: error ? (typeof error.code === 'number' ? error.code : 1) : 0, stdout, stderr });
    });
  });
}

const topics = async (): Promise<Set<string>> => new Set(await withAdmin(bootstrap, (admin) => admin.listTopics()));

async function committed(): Promise<number[]> {
  const group = new GroupOffsets(bootstrap, appId);
  try {
    return (await group.fetch([0, 1].map((partition) => ({ topic: input, partition })))).map((o) => o.offset);
  } finally {
    await group.close();
  }
}

test('reset refuses while a worker runs; --dry-run lists the internal topics, offsets and state directory and changes nothing; reset does it', async (context) => {
  assert.equal(internal.length, 2, `a repartition and a changelog topic: ${internal.join(', ')}`);
  await createTopics(bootstrap, [{ name: input, partitions: 2 }, { name: output, partitions: 1 }]);
  await produceRecords(bootstrap, input, ['the cat', 'the dog', 'the end', 'a cat'].map((line, i) => ({ key: Buffer.from(`k${i}`), value: Buffer.from(line) })));

  const worker = spawn(process.execPath, ['--import', 'tsx', 'src/cli/main.ts', 'run', 'topology/word-count.ts', '--no-typecheck'], { cwd: projectRoot(), env, stdio: ['ignore', 'ignore', 'pipe'] });
  let workerLog = '';
  worker.stderr.on('data', (d: Buffer) => (workerLog += d.toString()));
  const exited = new Promise((resolve) => worker.on('exit', resolve));
  try {
    await eventually(async () => (await committed()).reduce((n, o) => n + Math.max(0, o), 0) === 4, 120_000, `the worker to commit all 4 lines (log: ${workerLog.slice(-2000)})`);
    const refused = await onceflow('reset', 'topology/word-count.ts');
    assert.equal(refused.code, 1, refused.stdout);
    assert.match(refused.stderr, new RegExp(`^onceflow: error \\[RESET_GROUP_ACTIVE\\]: consumer group ${appId} has 1 live member .*Nothing was changed$`, 'm'));
    const refusedDry = await onceflow('reset', 'topology/word-count.ts', '--dry-run');
    assert.match(refusedDry.stderr, /RESET_GROUP_ACTIVE/);
  } finally {
    worker.kill('SIGTERM');
    await exited;
  }
  assert.equal((await readTopic(bootstrap, output)).length > 0, true, 'the worker wrote counts');

  const offsetsBefore = await committed();
  assert.equal(offsetsBefore.reduce((a, b) => a + b, 0), 4);
  assert.ok(existsSync(join(stateDir, appId)), 'the worker left local state');
  for (const t of internal) assert.ok((await topics()).has(t), `${t} exists before`);

  // A stopped worker's member leaves the group on close; the dry run also waits out a slow leave.
  let dry = { code: 1, stdout: '', stderr: '' };
  await eventually(async () => (dry = await onceflow('reset', 'topology/word-count.ts', '--dry-run')).code === 0, 60_000, 'the group to have no member');
  context.diagnostic(dry.stdout);
  for (const t of internal) assert.match(dry.stdout, new RegExp(`^  ${t} \\((repartition|changelog)\\)$`, 'm'));
  for (const [partition, at] of offsetsBefore.entries()) assert.match(dry.stdout, new RegExp(`^  ${input}-${partition}: committed ${at} -> 0$`, 'm'));
  assert.match(dry.stdout, new RegExp(`^local state to delete:\\n  ${join(stateDir, appId)}$`, 'm'));
  assert.match(dry.stdout, new RegExp(`^  ${output} \\(sink\\)$`, 'm'));
  assert.deepEqual(await committed(), offsetsBefore, 'dry run: offsets unchanged');
  for (const t of internal) assert.ok((await topics()).has(t), `dry run: ${t} still there`);
  assert.ok(existsSync(join(stateDir, appId)), 'dry run: state still there');

  const reset = await onceflow('reset', 'topology/word-count.ts');
  assert.equal(reset.code, 0, reset.stderr);
  assert.match(reset.stdout, /^input offsets set to the beginning:/m);
  const after = await topics();
  for (const t of internal) assert.equal(after.has(t), false, `${t} deleted`);
  for (const t of [input, output, `${appId}-dlq`]) assert.ok(after.has(t), `${t} kept`);
  assert.deepEqual(await committed(), [0, 0], 'offsets at the beginning');
  assert.equal(existsSync(join(stateDir, appId)), false, 'local state deleted');
});
