import assert from 'node:assert/strict';
import { test } from 'node:test';
import { compile } from '../../src/graph/index.ts';
import { produceRecords, type RecordToProduce } from '../../src/kafka/produce-records.ts';
import { readTopic } from '../../src/kafka/read-topic.ts';
import { prng } from '../../src/verify/orders-input.ts';
import { waitCaughtUp } from '../../src/verify/progress.ts';
import { WorkerProcess } from '../../src/verify/worker-process.ts';
import { customerSegmentsTopology, type SegmentCustomer } from '../../topology/customer-segments.ts';
import { createTopics, testCluster, uniqueName } from '../support/cluster.ts';

const PARTITIONS = 3;
const CUSTOMERS = 200;
const SEGMENTS = ['gold', 'silver', 'bronze', 'basic'];
const BATCHES = 6;
const UPDATES_PER_BATCH = 400;

/** Customer updates: most move a customer to a (maybe new) segment with a new balance, some delete it. */
function updates(rand: () => number, model: Map<string, SegmentCustomer>): RecordToProduce[] {
  return Array.from({ length: UPDATES_PER_BATCH }, () => {
    const id = `c${Math.floor(rand() * CUSTOMERS)}`;
    if (rand() < 0.15) {
      model.delete(id);
      return { key: Buffer.from(id), value: null };
    }
    const row: SegmentCustomer = { segment: SEGMENTS[Math.floor(rand() * SEGMENTS.length)]!, balance: Math.floor(rand() * 1000) };
    model.set(id, row);
    return { key: Buffer.from(id), value: Buffer.from(JSON.stringify(row)) };
  });
}

/** The last committed value per key of an output topic (a key always lands in one partition). */
async function lastValues(bootstrap: string, topic: string): Promise<Record<string, number>> {
  const last = new Map<string, number>();
  const records = await readTopic(bootstrap, topic, { isolation: 'read_committed' });
  for (const r of records.sort((a, b) => a.partition - b.partition || a.offset - b.offset)) last.set(r.key!.toString(), JSON.parse(r.value!.toString()) as number);
  return Object.fromEntries([...last].sort());
}

test('customers change segment and are deleted while a replica is SIGKILLed mid-way: per-segment counts and sums end exactly as the model of the table', async () => {
  const { bootstrap } = testCluster();
  const t = { customers: uniqueName('customers'), counts: uniqueName('segment-counts'), balances: uniqueName('segment-balances') };
  const appId = uniqueName('app-segments');
  await createTopics(bootstrap, Object.values(t).map((name) => ({ name, partitions: PARTITIONS })));
  const compiled = compile(customerSegmentsTopology(t), { appId });
  const repartition = compiled.topics.filter((x) => x.kind === 'repartition').map((x) => x.name);
  const env = { ONCEFLOW_BOOTSTRAP: bootstrap, ONCEFLOW_SEGMENTS_CUSTOMERS: t.customers, ONCEFLOW_SEGMENTS_COUNTS: t.counts, ONCEFLOW_SEGMENTS_BALANCES: t.balances, ONCEFLOW_COMMIT_INTERVAL_MS: '50' };
  const workers = new Map<string, WorkerProcess>();
  const start = (id: string): WorkerProcess => {
    const w = new WorkerProcess(id, 'topology/customer-segments.ts', ['--app-id', appId, '--instance-id', id], env);
    workers.set(id, w);
    return w;
  };
  const rand = prng(43);
  const model = new Map<string, SegmentCustomer>();
  try {
    for (const id of ['a', 'b']) start(id);
    await Promise.all([...workers.values()].map((w) => w.waitFor((e) => e.type === 'assigned', 90_000, 'assignment')));
    for (let batch = 0; batch < BATCHES; batch++) {
      const records = updates(rand, model);
      if (batch !== BATCHES / 2) {
        await produceRecords(bootstrap, t.customers, records);
        continue;
      }
      // Mid-way, with half a batch in flight: a replica dies (inside an open transaction, most likely) and comes back.
      await produceRecords(bootstrap, t.customers, records.slice(0, records.length / 2));
      const victim = workers.get('b')!;
      await victim.waitFor((e) => e.type === 'committed', 60_000, 'a commit');
      victim.kill('SIGKILL');
      await victim.exit();
      await produceRecords(bootstrap, t.customers, records.slice(records.length / 2));
      start('b');
    }
    await waitCaughtUp({ bootstrap, groupId: appId, plainTopics: [t.customers], transactionalTopics: repartition, stableMs: 2_000, timeoutMs: 180_000 });
    const wantCounts: Record<string, number> = {};
    const wantBalances: Record<string, number> = {};
    for (const segment of [...SEGMENTS].sort()) {
      const rows = [...model.values()].filter((c) => c.segment === segment);
      wantCounts[segment] = rows.length;
      wantBalances[segment] = rows.reduce((sum, c) => sum + c.balance, 0);
    }
    assert.deepEqual(await lastValues(bootstrap, t.counts), wantCounts);
    assert.deepEqual(await lastValues(bootstrap, t.balances), wantBalances);
    assert.equal(
      Object.values(wantCounts).reduce((a, b) => a + b, 0),
      model.size,
      'every current customer is in exactly one segment',
    );
    console.log(`# ${BATCHES * UPDATES_PER_BATCH} updates of ${CUSTOMERS} customers, ${model.size} current: counts ${JSON.stringify(wantCounts)}`);
  } finally {
    await Promise.all([...workers.values()].map((w) => w.stop(15_000)));
  }
});
