import assert from 'node:assert/strict';
import { execFile, spawn } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, test } from 'node:test';
import { isAlive } from '../../src/kafka/processes.ts';
import type { LocalClusterInfo } from '../../src/kafka/cluster-info.ts';
import { projectRoot } from '../../src/kafka/paths.ts';
import { eventually } from '../../src/verify/worker-process.ts';

// A user's first hour, with nothing configured: no ONCEFLOW_BOOTSTRAP, every command finds the cluster
// `dev up` recorded in ONCEFLOW_HOME (the project's .onceflow/ by default).
const home = mkdtempSync(join(tmpdir(), 'onceflow-newcomer-'));
const env: NodeJS.ProcessEnv = { PATH: process.env.PATH, HOME: process.env.HOME, ONCEFLOW_HOME: home, ONCEFLOW_STATE_DIR: join(home, 'state'), ONCEFLOW_LOG_LEVEL: 'warn' };
const clusterInfo = (): LocalClusterInfo => JSON.parse(readFileSync(join(home, 'dev.json'), 'utf8')) as LocalClusterInfo;

function onceflow(...args: string[]): Promise<{ code: number; stdout: string; stderr: string }> {
  return new Promise((resolve) => {
    execFile(process.execPath, ['--import', 'tsx', 'src/cli/main.ts', ...args], { cwd: projectRoot(), env, timeout: 180_000 }, (error, stdout, stderr) => {
      resolve({ code: error ? (typeof error.code === 'number' ? error.code : 1) : 0, stdout, stderr });
    });
  });
}

async function ok(...args: string[]): Promise<string> {
  const r = await onceflow(...args);
  assert.equal(r.code, 0, `onceflow ${args.join(' ')}\n${r.stdout}\n${r.stderr}`);
  return r.stdout;
}

after(async () => {
  await onceflow('dev', 'down');
  rmSync(home, { recursive: true, force: true });
});

test('dev up, topics create, produce, run, consume: the newcomer path with no script of their own; a killed broker comes back on its data; down leaves nothing running', async () => {
  await ok('dev', 'up');
  const first = clusterInfo();
  assert.match(await ok('topics', 'create', 'lines', 'word-counts', '--partitions', '2'), /created: lines \(2 partitions\)/);
  assert.match(await ok('topics', 'list'), /^lines$/m);
  assert.equal((JSON.parse(await ok('topics', 'describe', 'lines', '--json')) as { partitions: unknown[] }).partitions.length, 2);

  const produce = spawn(process.execPath, ['--import', 'tsx', 'src/cli/main.ts', 'produce', 'lines', '--format', 'text'], { cwd: projectRoot(), env, stdio: ['pipe', 'pipe', 'pipe'] });
  produce.stdin.end('the cat\nthe dog\nthe end\n');
  let produced = '';
  produce.stdout.on('data', (d: Buffer) => (produced += d.toString()));
  assert.equal(await new Promise((r) => produce.on('exit', r)), 0);
  assert.match(produced, /produced 3 record\(s\) to lines/);

  const worker = spawn(process.execPath, ['--import', 'tsx', 'src/cli/main.ts', 'run', 'topology/word-count.ts'], { cwd: projectRoot(), env, stdio: ['ignore', 'ignore', 'pipe'] });
  let workerLog = '';
  worker.stderr.on('data', (d: Buffer) => (workerLog += d.toString()));
  const counts = new Map<string, number>();
  try {
    await eventually(
      async () => {
        const out = await ok('consume', 'word-counts', '--from-beginning', '--idle-ms', '2000');
        for (const line of out.split('\n').filter((l) => l !== '')) {
          const r = JSON.parse(line) as { key: string; value: number };
          counts.set(r.key, r.value);
        }
        return counts.get('the') === 3;
      },
      120_000,
      `the word counts (worker log: ${workerLog.slice(-2000)})`,
    );
  } finally {
    worker.kill('SIGTERM');
    await new Promise((r) => worker.on('exit', r));
  }
  assert.deepEqual(Object.fromEntries(counts), { the: 3, cat: 1, dog: 1, end: 1 });
  const withHeaders = JSON.parse((await ok('consume', 'word-counts', '--from-beginning', '--max', '1', '--headers', '--isolation', 'read_uncommitted')).trim()) as { headers: Record<string, string> };
  assert.match(withHeaders.headers['onceflow.lineage'] ?? '', /^lines\/\d+\/\d+#/);

  // The broker crashes; `dev up` starts it again on the same port and data, and keeps the running registry.
  process.kill(first.brokerPid, 'SIGKILL');
  await eventually(() => !isAlive(first.brokerPid), 10_000, 'the broker to die');
  const up = await ok('dev', 'up');
  assert.match(up, /started again on its data/);
  const second = clusterInfo();
  assert.equal(second.bootstrap, first.bootstrap, 'the same address: running clients reconnect');
  assert.equal(second.registryPid, first.registryPid, 'no second registry');
  assert.notEqual(second.brokerPid, first.brokerPid);
  const topics = await ok('topics', 'list');
  assert.match(topics, /^lines$/m);
  assert.match(topics, /^word-counts$/m);
  assert.equal((await ok('consume', 'lines', '--from-beginning', '--max', '3')).trim().split('\n').length, 3, 'the records are still there');

  await ok('dev', 'down');
  for (const pid of [first.brokerPid, second.brokerPid, second.registryPid]) assert.equal(isAlive(pid), false, `pid ${pid} outlived dev down`);

  // Stopped: commands name the stopped cluster; the next `dev up` reuses it; --fresh starts empty.
  const down = await onceflow('topics', 'list');
  assert.equal(down.code, 1);
  assert.match(down.stderr, /BROKER_UNREACHABLE.*dev\.json.*`onceflow dev up` starts it again/);
  await ok('dev', 'up', '--no-registry');
  assert.match(await ok('topics', 'list'), /^lines$/m);
  await ok('dev', 'up', '--fresh', '--no-registry');
  assert.doesNotMatch(await ok('topics', 'list'), /^lines$/m);
});
