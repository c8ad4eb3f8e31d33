import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { test } from 'node:test';
import { loadTopology } from '../../src/dsl/load.ts';
import { compile } from '../../src/graph/compile.ts';
import { fingerprintOf } from '../../src/graph/fingerprint.ts';
import { projectRoot } from '../../src/kafka/paths.ts';
import { kafkaTopologyRecord } from '../../src/kafka/topology-record.ts';
import type { UpgradeReport } from '../../src/cli/upgrade.ts';
import { createTopics, testCluster, uniqueName } from '../support/cluster.ts';

const FIXTURE = 'test/fixtures/upgradable-count.ts';
const { bootstrap } = testCluster();
const appId = uniqueName('upgrade-cli');
const input = uniqueName('upgrade-cli-in');
const output = uniqueName('upgrade-cli-out');

function onceflow(env: Readonly<Record<string, string>>, ...args: string[]): Promise<{ code: number; stdout: string; stderr: string }> {
  return new Promise((resolve) => {
    execFile(
      process.execPath,
      ['--import', 'tsx', 'src/cli/main.ts', ...args],
      { cwd: projectRoot(), env: { PATH: process.env.PATH, HOME: process.env.HOME, ONCEFLOW_BOOTSTRAP: bootstrap, ONCEFLOW_APP_ID: appId, COUNT_INPUT: input, COUNT_OUTPUT: output, ...env }, timeout: 180_000 },
      (error, stdout, stderr) => resolve({ code: error ? (typeof error.code === 'number' ? error.code : 1) : 0, stdout, stderr }),
    );
  });
}

test('upgrade check: a first deploy, then each change against the recorded topology with its class; exit 1 when one is breaking', async (context) => {
  await createTopics(bootstrap, [{ name: input, partitions: 2 }, { name: output, partitions: 2 }]);
  const first = await onceflow({}, 'upgrade', 'check', FIXTURE);
  assert.equal(first.code, 0, first.stderr);
  assert.match(first.stdout, new RegExp(`^application ${appId}: no topology recorded in ${appId}-topology: a first deploy`, 'm'));

  // What a worker of the first version records at start (the fixture reads its topic names from the environment).
  process.env.COUNT_INPUT = input;
  process.env.COUNT_OUTPUT = output;
  const running = compile(await loadTopology(FIXTURE), { appId });
  const planned = running.resolvePartitions({ [input]: 2 }).topics;
  const fingerprint = fingerprintOf(running, new Map(planned.filter((t) => t.partitions !== undefined).map((t) => [t.name, t.partitions!] as const)));
  await kafkaTopologyRecord(bootstrap, appId, {}).write({ fingerprint, recordedAt: new Date().toISOString(), by: `${appId}-a` });

  const same = await onceflow({}, 'upgrade', 'check', FIXTURE);
  assert.equal(same.code, 0, same.stderr);
  assert.match(same.stdout, /^no change: the new version starts on the existing state as it is$/m);

  const compatible = await onceflow({ UPGRADE_VERSION: '2' }, 'upgrade', 'check', FIXTURE);
  context.diagnostic(compatible.stdout);
  assert.equal(compatible.code, 0, compatible.stderr);
  assert.match(compatible.stdout, /^ {2}compatible: sub-topology 0 \(.*\): stages changed: /m);
  assert.doesNotMatch(compatible.stdout, /breaking|state-resetting/);

  const renamed = await onceflow({ UPGRADE_STORE: 'totals' }, 'upgrade', 'check', FIXTURE);
  context.diagnostic(renamed.stdout);
  assert.equal(renamed.code, 1, renamed.stderr);
  assert.match(renamed.stdout, /^ {2}breaking: store counts renamed to totals: .*orphaned/m);
  assert.match(renamed.stdout, /^to start it anyway: onceflow run <topology> --reset-state totals/m);

  const json = await onceflow({ UPGRADE_STORE: 'totals' }, 'upgrade', 'check', FIXTURE, '--json');
  assert.equal(json.code, 1, json.stderr);
  const report = JSON.parse(json.stdout) as UpgradeReport;
  assert.equal(report.breaking, true);
  assert.equal(report.recorded?.by, `${appId}-a`);
  assert.equal(report.partitionsCompared, true);
  assert.deepEqual(report.changes.map((c) => [c.classification, c.what, c.store]).filter(([, what]) => String(what).startsWith('store')), [
    ['breaking', 'store counts renamed to totals', 'totals'],
  ]);
});
