import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, test } from 'node:test';
import { withAdmin } from '../../src/kafka/admin.ts';
import { GroupOffsets } from '../../src/kafka/group-offsets.ts';
import { readTopic } from '../../src/kafka/read-topic.ts';
import { kafkaTopologyRecord } from '../../src/kafka/topology-record.ts';
import { produceAll } from '../../src/verify/orders-input.ts';
import { waitCaughtUp } from '../../src/verify/progress.ts';
import { WorkerProcess } from '../../src/verify/worker-process.ts';
import { createTopics, testCluster, uniqueName } from '../support/cluster.ts';

const FIXTURE = 'test/fixtures/upgradable-count.ts';
const { bootstrap } = testCluster();
const workers: WorkerProcess[] = [];
const stateDir = mkdtempSync(join(tmpdir(), 'onceflow-upgrade-'));
after(async () => {
  await Promise.all(workers.map((w) => w.stop()));
  rmSync(stateDir, { recursive: true, force: true });
});

interface App {
  readonly appId: string;
  readonly input: string;
  readonly output: string;
}

async function newApp(prefix: string): Promise<App> {
  const app = { appId: uniqueName(prefix), input: uniqueName(`${prefix}-in`), output: uniqueName(`${prefix}-out`) };
  await createTopics(bootstrap, [{ name: app.input, partitions: 2 }, { name: app.output, partitions: 2 }]);
  return app;
}

function start(app: App, instance: string, env: Readonly<Record<string, string>> = {}, args: readonly string[] = []): WorkerProcess {
  const w = new WorkerProcess(instance, FIXTURE, ['--app-id', app.appId, '--instance-id', instance, ...args], {
    ONCEFLOW_BOOTSTRAP: bootstrap,
    ONCEFLOW_STATE_DIR: stateDir,
    // Every count goes out as it is made, so that the outputs show each increment once: a duplicate or a loss shows.
    ONCEFLOW_CACHE_MAX_BYTES: '0',
    COUNT_INPUT: app.input,
    COUNT_OUTPUT: app.output,
    ...env,
  });
  workers.push(w);
  return w;
}

const records = (from: number, count: number, keys: number) => Array.from({ length: count }, (_, i) => ({ key: `k${(from + i) % keys}`, value: `v${from + i}` }));

async function committed(app: App): Promise<number[]> {
  const group = new GroupOffsets(bootstrap, app.appId);
  try {
    return (await group.fetch([0, 1].map((partition) => ({ topic: app.input, partition })))).map((o) => o.offset);
  } finally {
    await group.close();
  }
}

/** Per key, the counts the output holds, in the order they were written (a key is on one partition). */
async function countsByKey(app: App): Promise<Map<string, number[]>> {
  const out = new Map<string, number[]>();
  for (const r of (await readTopic(bootstrap, app.output)).sort((a, b) => a.partition - b.partition || a.offset - b.offset)) {
    const key = r.key!.toString();
    out.set(key, [...(out.get(key) ?? []), Number(r.value!.toString())]);
  }
  return out;
}

test('a worker whose topology renames a store is refused before it consumes; --reset-state starts it on an empty store', async () => {
  const app = await newApp('upgrade-refused');
  await produceAll(bootstrap, app.input, records(0, 200, 10));
  const first = start(app, 'a');
  await first.waitFor((e) => e.type === 'topology-checked', 120_000, 'the first start check');
  await waitCaughtUp({ bootstrap, groupId: app.appId, plainTopics: [app.input], timeoutMs: 180_000 });
  await first.stop();
  const offsets = await committed(app);
  assert.equal(offsets.reduce((a, b) => a + b, 0), 200);
  const outputBefore = (await readTopic(bootstrap, app.output, { isolation: 'read_uncommitted' })).length;
  const recorded = await kafkaTopologyRecord(bootstrap, app.appId, {}).read();
  assert.deepEqual(recorded?.fingerprint.stores.map((s) => s.name), ['counts']);

  await produceAll(bootstrap, app.input, records(200, 50, 10));
  const renamed = start(app, 'a', { UPGRADE_STORE: 'totals' });
  const exit = await renamed.exit();
  assert.equal(exit.code, 1, renamed.stderr.join('\n'));
  const error = renamed.stderr.join('\n');
  assert.match(error, /TOPOLOGY_INCOMPATIBLE/);
  assert.match(error, /breaking: store counts renamed to totals/);
  assert.equal(renamed.events.some((e) => e.type === 'started' || e.type === 'assigned'), false, 'it never joined the group');
  assert.deepEqual(await committed(app), offsets, 'no committed offset moved');
  assert.equal((await readTopic(bootstrap, app.output, { isolation: 'read_uncommitted' })).length, outputBefore, 'nothing produced, not even aborted');
  const topics = new Set(await withAdmin(bootstrap, (admin) => admin.listTopics()));
  assert.equal(topics.has(`${app.appId}-totals-changelog`), false, 'refused before it created an internal topic');
  assert.equal((await kafkaTopologyRecord(bootstrap, app.appId, {}).read())?.recordedAt, recorded?.recordedAt, 'the record is the running version\'s still');

  const reset = start(app, 'a', { UPGRADE_STORE: 'totals' }, ['--reset-state', 'totals']);
  const resetEvent = await reset.waitFor((e) => e.type === 'store-reset', 120_000, 'the store reset');
  assert.equal(resetEvent.store, 'totals');
  assert.deepEqual(resetEvent.changelogs, [`${app.appId}-totals-changelog`, `${app.appId}-counts-changelog`]);
  await waitCaughtUp({ bootstrap, groupId: app.appId, plainTopics: [app.input], timeoutMs: 180_000 });
  await reset.stop();
  // The store started empty at the committed offsets: the 50 records after them, 5 per key, count 1..5.
  const counts = await countsByKey(app);
  for (const [key, values] of counts) assert.deepEqual(values, [...Array.from({ length: 20 }, (_, i) => i + 1), 1, 2, 3, 4, 5], key);
  assert.equal((await withAdmin(bootstrap, (admin) => admin.listTopics())).includes(`${app.appId}-counts-changelog`), false, "the former store's changelog is gone");
  assert.deepEqual((await kafkaTopologyRecord(bootstrap, app.appId, {}).read())?.fingerprint.stores.map((s) => s.name), ['totals']);
});

test('a rolling upgrade with a compatible change under load, two workers replaced one at a time, loses and repeats nothing', async () => {
  const app = await newApp('upgrade-rolling');
  const keys = 20;
  const total = 3_000;
  await produceAll(bootstrap, app.input, records(0, 500, keys));
  const a = start(app, 'a');
  const b = start(app, 'b');
  await Promise.all([a, b].map((w) => w.waitFor((e) => e.type === 'assigned', 120_000, 'an assignment')));
  let produced = 500;
  let loading = true;
  const load = (async () => {
    while (loading && produced < total) {
      await produceAll(bootstrap, app.input, records(produced, 100, keys));
      produced += 100;
      await new Promise((r) => setTimeout(r, 100));
    }
  })();
  const replaced: WorkerProcess[] = [];
  for (const [old, instance] of [[a, 'a'], [b, 'b']] as const) {
    await old.stop();
    const next = start(app, instance, { UPGRADE_VERSION: '2' });
    const checked = await next.waitFor((e) => e.type === 'topology-checked', 120_000, `${instance}'s start check`);
    assert.equal(checked.first, false);
    assert.ok((checked.changes as string[]).every((c) => c.startsWith('compatible: ')), JSON.stringify(checked.changes));
    await next.waitFor((e) => e.type === 'assigned', 120_000, `${instance}'s assignment`);
    replaced.push(next);
  }
  loading = false;
  await load;
  if (produced < total) {
    await produceAll(bootstrap, app.input, records(produced, total - produced, keys));
    produced = total;
  }
  await waitCaughtUp({ bootstrap, groupId: app.appId, plainTopics: [app.input], timeoutMs: 240_000 });
  await Promise.all(replaced.map((w) => w.stop()));

  const counts = await countsByKey(app);
  assert.equal(counts.size, keys);
  for (const [key, values] of counts) {
    // Each increment once, in order: a repeated record would repeat a count, a lost one leave a gap.
    assert.deepEqual(values, Array.from({ length: produced / keys }, (_, i) => i + 1), key);
  }
  // The first replaced worker recorded the new version; the second found it recorded and had nothing to add.
  const recorded = await kafkaTopologyRecord(bootstrap, app.appId, {}).read();
  assert.ok(recorded?.by.endsWith('-a'), `recorded by the first replaced worker: ${recorded?.by}`);
  assert.deepEqual(replaced[1]!.events.find((e) => e.type === 'topology-checked')?.changes, []);
});
