import assert from 'node:assert/strict';
import { after, describe, test } from 'node:test';
import { setTimeout as sleep } from 'node:timers/promises';
import { ensureTopics, withAdmin } from '../../src/kafka/admin.ts';
import { GroupOffsets } from '../../src/kafka/group-offsets.ts';
import { TestRun } from '../support/runs.ts';

const runs: TestRun[] = [];
after(async () => {
  await Promise.all(runs.map((r) => r.stopAll()));
});
function newRun(...args: ConstructorParameters<typeof TestRun>): TestRun {
  const run = new TestRun(...args);
  runs.push(run);
  return run;
}

describe('the exactly-once worker', () => {
  test('one worker over 3 partitions produces exactly the expected orders output', async () => {
    const run = newRun('orders', 3);
    await run.createTopics();
    await run.produce(3_000, 1);
    const w = run.startWorker('a');
    await w.waitFor((e) => e.type === 'assigned', 60_000, 'assignment');
    await run.caughtUp();
    const report = await run.verify();
    assert.equal(report.duplicates, 0);
    assert.equal(report.lost, 0);
    assert.equal(report.aggregateMismatches, 0, report.examples.mismatches.join('\n'));
    assert.ok(report.outputRecords > 0);
    const exit = await w.stop();
    assert.equal(exit.code, 0, 'SIGTERM ends the worker with exit code 0');
    assert.ok(w.events.some((e) => e.type === 'stopped'));
  });

  test('three replicas share 6 partitions; adding and removing one mid-stream keeps the output exact', async () => {
    const run = newRun('orders', 6);
    await run.createTopics();
    const a = run.startWorker('a');
    const b = run.startWorker('b');
    const c = run.startWorker('c');
    await Promise.all([a, b, c].map((w) => w.waitFor((e) => e.type === 'assigned', 60_000, 'assignment')));
    for (let i = 0; i < 6; i++) {
      await run.produce(1_500, 100 + i);
      if (i === 1) run.startWorker('d');
      if (i === 3) await b.stop();
      await sleep(300);
    }
    await run.caughtUp();
    const report = await run.verify();
    assert.deepEqual({ duplicates: report.duplicates, lost: report.lost, mismatches: report.aggregateMismatches }, { duplicates: 0, lost: 0, mismatches: 0 }, JSON.stringify(report.examples));
    const rebalanced = run.workers.reduce((n, w) => n + w.count('assigned') + w.count('revoked'), 0);
    assert.ok(rebalanced >= 5, `rebalances happened (${rebalanced} assign/revoke events)`);
  });

  test('a worker SIGKILLed inside a transaction and restarted leaves exactly the expected read_committed output', async () => {
    const run = newRun('orders', 3);
    await run.createTopics();
    await run.produce(6_000, 7);
    // The worker kills itself after sending the offsets of its first transaction that wrote output records (early ones
    // may hold only repartition and changelog records), before committing it. Not right after produce: the records
    // may still sit in librdkafka's queue then, and die with the process unseen by the broker.
    const doomed = run.startWorker('a', { env: { ONCEFLOW_CHAOS_KILL_AT: 'after-send-offsets:1:outputs' } });
    const exit = await doomed.exit();
    assert.equal(exit.signal, 'SIGKILL');
    const restarted = run.startWorker('a');
    await restarted.waitFor((e) => e.type === 'assigned', 60_000, 'assignment');
    await run.caughtUp();
    const report = await run.verify(true);
    assert.deepEqual({ duplicates: report.duplicates, lost: report.lost, mismatches: report.aggregateMismatches }, { duplicates: 0, lost: 0, mismatches: 0 }, JSON.stringify(report.examples));
    assert.ok((report.abortedSeenByReadUncommitted ?? 0) > 0, 'the killed transaction\'s records are visible to read_uncommitted');
    console.log(`# aborted records visible to read_uncommitted after the SIGKILL: ${report.abortedSeenByReadUncommitted}`);
  });

  test('a zombie (SIGSTOPped until evicted) is fenced: none of its later writes is visible, and it recovers', async () => {
    const run = newRun('orders', 2, { ONCEFLOW_SESSION_TIMEOUT_MS: '3000' });
    await run.createTopics();
    const a = run.startWorker('a');
    await a.waitFor((e) => e.type === 'assigned', 60_000, 'assignment');
    await run.produce(2_000, 11);
    await a.waitFor((e) => e.type === 'committed', 30_000, 'a commit');
    // Input keeps arriving so A has an open transaction when it freezes.
    const feeding = run.produce(4_000, 12);
    await sleep(150);
    a.kill('SIGSTOP');
    await feeding;
    const b = run.startWorker('b');
    await b.waitFor((e) => e.type === 'assigned', 90_000, 'B\'s assignment');
    await b.waitFor((e) => e.type === 'committed', 90_000, 'B\'s first commit');
    const eventsBefore = a.events.length;
    a.kill('SIGCONT');
    await run.produce(2_000, 13);
    const noticed = (e: { type: string }) => a.events.indexOf(e as never) >= eventsBefore && ['fenced', 'aborted', 'revoked'].includes(e.type);
    await a.waitFor(noticed, 60_000, 'A noticing it was fenced');
    await run.caughtUp();
    const report = await run.verify();
    assert.deepEqual({ duplicates: report.duplicates, lost: report.lost, mismatches: report.aggregateMismatches }, { duplicates: 0, lost: 0, mismatches: 0 }, JSON.stringify(report.examples));
    assert.ok(a.alive, 'the zombie recovered instead of crashing');
  });

  test('a missing source topic is a clear error naming it', async () => {
    const run = newRun('orders', 1);
    const w = run.startWorker('a');
    const exit = await w.exit();
    assert.notEqual(exit.code, 0);
    const stderr = w.stderr.join('\n');
    assert.match(stderr, /TOPIC_MISSING/);
    assert.ok(stderr.includes(run.input), `names ${run.input}: ${stderr}`);
    assert.ok(!/\n\s+at /.test(stderr), 'no stack trace');
  });

  // Without the check the worker consumed its input and then aborted every ~10 s, the produce to the
  // missing topic timing out inside each transaction.
  test('a missing output topic is a clear error naming it, and the input stays unconsumed', async () => {
    const run = newRun('orders', 1);
    await withAdmin(run.bootstrap, (a) => ensureTopics(a, [{ name: run.input, partitions: 1 }]));
    await run.produce(100, 3);
    const w = run.startWorker('a');
    const exit = await w.exit();
    assert.notEqual(exit.code, 0);
    const stderr = w.stderr.join('\n');
    assert.match(stderr, /TOPIC_MISSING/);
    assert.match(stderr, /output topic missing/);
    assert.ok(stderr.includes(run.output), `names ${run.output}: ${stderr}`);
    assert.ok(!stderr.includes(run.input), `does not blame the input ${run.input}: ${stderr}`);
    const offsets = new GroupOffsets(run.bootstrap, run.appId);
    try {
      assert.deepEqual(
        (await offsets.fetch([{ topic: run.input, partition: 0 }])).map((o) => o.offset),
        [-1],
        'nothing of the input was committed',
      );
    } finally {
      await offsets.close();
    }
  });
});
