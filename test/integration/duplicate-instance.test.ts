import assert from 'node:assert/strict';
import { after, describe, test } from 'node:test';
import { setTimeout as sleep } from 'node:timers/promises';
import { TestRun } from '../support/runs.ts';
import type { WorkerProcess } from '../../src/verify/worker-process.ts';

/**
 * Two live processes with one instance id share one transactional id: each fences the other's
 * producer. Fencing must decide which one goes on; it must never lose or repeat a record.
 * Each scenario runs REPEAT times, since the loss it guards against was a race.
 */
const REPEAT = Number(process.env.ONCEFLOW_DUPLICATE_REPEAT ?? 3);

const runs: TestRun[] = [];
after(async () => {
  await Promise.all(runs.map((r) => r.stopAll()));
});

function exact(run: TestRun, report: Awaited<ReturnType<TestRun['verify']>>, round: number): void {
  assert.deepEqual(
    { duplicates: report.duplicates, lost: report.lost, mismatches: report.aggregateMismatches },
    { duplicates: 0, lost: 0, mismatches: 0 },
    `round ${round} (${run.appId}): ${JSON.stringify(report.examples)}`,
  );
  assert.ok(report.outputRecords > 0, 'the run produced output');
}

const refusedAsDuplicate = (w: WorkerProcess) => w.stderr.some((l) => l.includes('DUPLICATE_INSTANCE_ID'));

describe('two live processes with one instance id', () => {
  test(`started together (${REPEAT} rounds): exactly one goes on, and the output is exact`, async () => {
    for (let round = 1; round <= REPEAT; round++) {
      const run = new TestRun('orders', 6);
      runs.push(run);
      await run.createTopics();
      const feeding = run.produceOverTime(4_000, 100 + round, 20, 200);
      const first = run.startWorker('x');
      const second = run.startWorker('x');
      await feeding;
      // The loser learns it is a duplicate when it is fenced with the other member in the group.
      const loserExit = await Promise.race([first.exit().then((e) => ({ w: first, e })), second.exit().then((e) => ({ w: second, e })), sleep(90_000).then(() => undefined)]);
      assert.ok(loserExit, `round ${round}: neither process stepped back within 90 s`);
      const survivor = loserExit.w === first ? second : first;
      assert.notEqual(loserExit.e.code, 0, `round ${round}: the process that stepped back exits with an error`);
      assert.ok(refusedAsDuplicate(loserExit.w), `round ${round}: it says DUPLICATE_INSTANCE_ID; stderr: ${loserExit.w.stderr.slice(-5).join('\n')}`);
      await run.produce(500, 200 + round);
      await run.caughtUp();
      assert.ok(survivor.alive, `round ${round}: the other process goes on`);
      exact(run, await run.verify(), round);
      await run.stopAll();
    }
  });

  test(`a replacement started before the old process stops (${REPEAT} rounds of 3 replacements): the output is exact`, async () => {
    for (let round = 1; round <= REPEAT; round++) {
      const run = new TestRun('orders', 6);
      runs.push(run);
      await run.createTopics();
      let current = run.startWorker('x');
      run.startWorker('y');
      await current.waitFor((e) => e.type === 'assigned', 60_000, 'assignment');
      const feeding = run.produceOverTime(4_000, 300 + round, 20, 250);
      for (let r = 0; r < 3; r++) {
        await sleep(700);
        const replacement = run.startWorker('x');
        // Rolling updates stop the old process a moment after starting the new one.
        await sleep(500 + r * 1000);
        const exit = await current.stop();
        assert.equal(exit.code, 0, `round ${round}, replacement ${r + 1}: the old process stops cleanly; stderr: ${current.stderr.slice(-6).join('\n')}`);
        // The next rolling step waits for this one to be ready, as a rollout waits for readiness.
        await replacement.waitFor((e) => e.type === 'assigned', 90_000, 'the replacement\'s assignment');
        current = replacement;
      }
      await feeding;
      await run.caughtUp();
      assert.ok(current.alive, `round ${round}: the last replacement runs`);
      exact(run, await run.verify(), round);
      await run.stopAll();
    }
  });
});
