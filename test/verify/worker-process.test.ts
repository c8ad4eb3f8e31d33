import assert from 'node:assert/strict';
import { readdirSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { test } from 'node:test';
import { fileURLToPath } from 'node:url';
import { WorkerProcess } from '../../src/verify/worker-process.ts';
import { createTopics, testCluster } from '../support/cluster.ts';

test("a running worker's diagnostic report gives its stack and handles, and leaves no file behind", async () => {
  const { bootstrap } = testCluster();
  const tag = `${process.pid}-${Date.now().toString(36)}`;
  const env = { ONCEFLOW_BOOTSTRAP: bootstrap, COUNT_INPUT: `report-in-${tag}`, COUNT_OUTPUT: `report-out-${tag}` };
  await createTopics(bootstrap, [{ name: env.COUNT_INPUT, partitions: 1 }, { name: env.COUNT_OUTPUT, partitions: 1 }]);
  const file = fileURLToPath(new URL('../fixtures/count-by-key.ts', import.meta.url));
  const worker = new WorkerProcess('reported', file, ['--app-id', `report-${tag}`, '--instance-id', 'a'], env);
  try {
    await worker.waitFor((e) => e.type === 'started', 60_000, 'start');
    const report = await worker.stackReport();
    assert.match(String(report), /^javascript stack: .+\n {2}active handles: .*(tcp|timer|async)/s);
    const reportDir = join(tmpdir(), `onceflow-reports-${process.pid}`);
    assert.deepEqual(readdirSync(reportDir).filter((f) => f.includes(`.${worker.pid}.`)), []);
  } finally {
    await worker.stop();
  }
});
