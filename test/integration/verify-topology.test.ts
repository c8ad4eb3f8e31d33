import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { after, test } from 'node:test';
import { loadTopology } from '../../src/dsl/load.ts';
import { compile } from '../../src/graph/compile.ts';
import { produceRecords } from '../../src/kafka/produce-records.ts';
import { readTopic } from '../../src/kafka/read-topic.ts';
import { projectRoot } from '../../src/kafka/paths.ts';
import { produceAll } from '../../src/verify/orders-input.ts';
import { waitCaughtUp } from '../../src/verify/progress.ts';
import { WorkerProcess } from '../../src/verify/worker-process.ts';
import { createTopics, testCluster, uniqueName } from '../support/cluster.ts';

const workers: WorkerProcess[] = [];
after(() => Promise.all(workers.map((w) => w.stop())));

const names = { VT_INPUT: uniqueName('vt-lines'), VT_SHOUTED: uniqueName('vt-shouted'), VT_COUNTS: uniqueName('vt-counts') };
const appId = uniqueName('vt');
const fixture = 'test/fixtures/user-topology.ts';

function verifyCli(...extra: string[]): Promise<{ code: number; stdout: string }> {
  return new Promise((resolve) => {
    execFile(process.execPath, ['--import', 'tsx', 'src/cli/main.ts', 'verify', fixture, '--app-id', appId, ...extra], { cwd: projectRoot(), env: { ...process.env, ...names }, timeout: 120_000 }, (error, stdout) =>
      resolve({ code: error ? (typeof error.code === 'number' ? error.code : 1) : 0, stdout }),
    );
  });
}

test('verify checks a user topology through its lineage headers: OK after a clean run, a duplicate, an orphan and a gap each found', async () => {
  const { bootstrap } = testCluster();
  Object.assign(process.env, names);
  const compiled = compile(await loadTopology(fixture), { appId });
  await createTopics(bootstrap, [{ name: names.VT_INPUT, partitions: 2 }, { name: names.VT_SHOUTED, partitions: 2 }, { name: names.VT_COUNTS, partitions: 2 }]);
  await produceAll(bootstrap, names.VT_INPUT, Array.from({ length: 60 }, (_, i) => ({ key: `l${i}`, value: i % 10 === 0 ? `# comment ${i}` : `w${i % 7} w${i % 3} w${i % 5}` })));
  const worker = new WorkerProcess('a', fixture, ['--app-id', appId, '--instance-id', 'a'], { ONCEFLOW_BOOTSTRAP: bootstrap, ...names });
  workers.push(worker);
  const repartition = compiled.topics.filter((t) => t.kind === 'repartition').map((t) => t.name);
  await waitCaughtUp({ bootstrap, groupId: appId, plainTopics: [names.VT_INPUT], transactionalTopics: repartition });
  await worker.stop();

  const clean = await verifyCli('--json');
  assert.equal(clean.code, 0, clean.stdout);
  const report = JSON.parse(clean.stdout) as { ok: boolean; inputRecords: number; duplicates: number; orphans: number; gaps: number; inputsWithoutOutput: number; unprocessed: number };
  assert.deepEqual({ ok: report.ok, inputs: report.inputRecords, duplicates: report.duplicates, orphans: report.orphans, gaps: report.gaps, unprocessed: report.unprocessed }, { ok: true, inputs: 60, duplicates: 0, orphans: 0, gaps: 0, unprocessed: 0 });
  assert.equal(report.inputsWithoutOutput, 6, 'the six comment lines were filtered');
  const modelled = await verifyCli('--model', 'test/fixtures/user-topology-model.ts', '--result', names.VT_COUNTS, '--json');
  assert.equal(modelled.code, 0, modelled.stdout);
  assert.ok((JSON.parse(modelled.stdout) as { aggregateKeys: number }).aggregateKeys > 0);

  // What a broken run would leave: an output written twice, one whose parent never committed, and a lost sibling.
  const shouted = await readTopic(bootstrap, names.VT_SHOUTED);
  const some = shouted[0]!;
  const lineage = (r: typeof some) => r.headers.find((h) => h.key === 'onceflow.lineage')!.value.toString();
  await produceRecords(bootstrap, names.VT_SHOUTED, [
    { key: some.key, value: some.value, headers: some.headers },
    { key: some.key, value: some.value, headers: [{ key: 'onceflow.lineage', value: Buffer.from(`${names.VT_INPUT}/0/99999#0`) }] },
    { key: some.key, value: some.value, headers: [{ key: 'onceflow.lineage', value: Buffer.from(lineage(some).replace(/#\d+$/, '#7')) }] },
  ]);
  assert.equal((await readTopic(bootstrap, names.VT_SHOUTED)).length, shouted.length + 3, 'the broken records landed');
  const broken = await verifyCli('--json');
  assert.equal(broken.code, 1, broken.stdout);
  const b = JSON.parse(broken.stdout) as { ok: boolean; duplicates: number; orphans: number; gaps: number };
  assert.deepEqual({ ok: b.ok, duplicates: b.duplicates, orphans: b.orphans, gaps: b.gaps }, { ok: false, duplicates: 1, orphans: 1, gaps: 3 });
});
