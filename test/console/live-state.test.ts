/**
 * The console's parts without a broker: the graph it draws from `describe --json`, and one refresh of
 * the live state from a scripted group and a real worker `/metrics` server (a stand-in worker behind it).
 */
import assert from 'node:assert/strict';
import { after, test } from 'node:test';
import { describeJson } from '../../src/cli/describe.ts';
import type { LagProbe } from '../../src/cli/status.ts';
import { LiveState } from '../../src/console/live-state.ts';
import { memberSample, SampleWindow } from '../../src/console/member-metrics.ts';
import { topologyGraph } from '../../src/console/topology-graph.ts';
import { TopologyBuilder } from '../../src/dsl/topology-builder.ts';
import { compile } from '../../src/graph/compile.ts';
import type { AdminClient } from '../../src/kafka/admin.ts';
import { attachMetrics } from '../../src/observability/metrics.ts';
import { startObservability } from '../../src/observability/health.ts';
import { formatCommitMetadata } from '../../src/runtime/transaction/commit-metadata.ts';
import { jsonSerde, stringSerde } from '../../src/serdes/index.ts';
import { FakeWorker } from '../observability/fake-worker.ts';
import { freePort } from '../support/ports.ts';

test('the graph has a node for every stage, store and topic, the effect outside the transaction with its key, and no dangling edge', () => {
  const app = new TopologyBuilder({ appId: 'shop' });
  app
    .stream('orders', { key: stringSerde, value: jsonSerde<{ id: string; customer: string; amount: number }>() })
    .effect('notify', async () => undefined, { idempotencyKey: (_k, o) => o.id })
    .groupBy((_k, o) => o.customer, { key: stringSerde })
    .aggregate(() => 0, (_k, o, total) => total + o.amount, { state: jsonSerde<number>(), name: 'totals' })
    .toStream()
    .to('totals', { key: stringSerde, value: jsonSerde<number>() });
  const d = describeJson(compile(app));
  const g = topologyGraph(d);
  const ids = new Set(g.nodes.map((n) => n.id));
  const expected = [...d.subtopologies.flatMap((s) => s.nodes.map((n) => `stage:${n.name}`)), ...d.stores.map((s) => `store:${s.name}`), ...d.topics.map((t) => `topic:${t.name}`)];
  assert.deepEqual([...ids].sort(), expected.sort());
  assert.ok(ids.has('topic:shop-totals-repartition') && ids.has('topic:shop-totals-changelog') && ids.has('store:totals'));
  const effects = g.nodes.filter((n) => n.boundary === 'external');
  assert.deepEqual(effects.map((n) => n.id), ['stage:notify']);
  assert.match(effects[0]!.sublabel, /key: .*o\.id/);
  assert.ok(g.nodes.filter((n) => n.kind === 'stage' && n.id !== 'stage:notify').every((n) => n.boundary === 'transactional'));
  for (const e of g.edges) assert.ok(ids.has(e.from) && ids.has(e.to), `${e.from} -> ${e.to}`);
  assert.ok(g.edges.some((e) => e.from === 'store:totals' && e.to === 'topic:shop-totals-changelog' && e.style === 'state'));
  assert.deepEqual(g.subtopologies, [0, 1]);
});

test('a sample is read back from the metrics a worker serves; rates per second, and a restarted worker starts a new window', async () => {
  const worker = new FakeWorker({ instanceId: 'w1' });
  worker.state = 'RUNNING';
  worker.stats.transactionsCommitted = 10;
  worker.stats.recordsConsumed = 100;
  worker.stats.lastCommitAt = 5_000;
  worker.stats.restoreRemaining = 1_234;
  worker.stats.standbyTasks = 2;
  const metrics = attachMetrics(worker, { processMetrics: false });
  const first = memberSample(await metrics.metrics(), 1_000);
  assert.deepEqual([first.transactionalId, first.state, first.transactionsCommitted, first.recordsConsumed, first.lastCommitAt], ['orders-w1', 'RUNNING', 10, 100, 5_000]);
  assert.deepEqual([first.restoreRemaining, first.standbyTasks], [1_234, 2], 'restore progress and standby tasks reach the console');
  worker.stats.transactionsCommitted = 14;
  worker.stats.recordsConsumed = 300;
  const second = memberSample(await metrics.metrics(), 3_000);
  metrics.detach();
  const window = new SampleWindow();
  window.add(first);
  window.add(second);
  assert.equal(window.ratePerSecond('transactionsCommitted'), 2);
  assert.equal(window.ratePerSecond('recordsConsumed'), 100);
  assert.equal(window.increase('transactionsCommitted'), 4);
  window.add({ ...second, at: 4_000, transactionsCommitted: 1 });
  assert.equal(window.increase('transactionsCommitted'), 0, 'counters that went down belong to a new incarnation');
});

const cleanups: (() => Promise<unknown>)[] = [];
after(async () => {
  for (const c of cleanups) await c();
});

interface ScriptedMember {
  readonly clientId: string;
  readonly partitions: readonly [string, number][];
}

/** What groupStatus asks of the admin client, answered from a script. */
function scriptedAdmin(group: { state: number; members: ScriptedMember[] }): AdminClient {
  const at = 1_700_000_000_000;
  return {
    // The console lists before it describes (kafka/groups.ts): the scripted group is always listed.
    listGroups: async () => ({ groups: [{ groupId: 'orders' }] }),
    describeGroups: async () => ({
      groups: [{ state: group.state, members: group.members.map((m, i) => ({ memberId: `m${i}`, clientId: m.clientId, clientHost: '/127.0.0.1', assignment: { topicPartitions: m.partitions.map(([topic, partition]) => ({ topic, partition })) } })) }],
    }),
    fetchOffsets: async () => [
      { topic: 'orders', partitions: [{ partition: 0, offset: '5', metadata: formatCommitMetadata({ by: 'orders-w1', at }) }, { partition: 1, offset: '-1', metadata: null }] },
      { topic: 'orders-totals-repartition', partitions: [{ partition: 0, offset: '7', metadata: formatCommitMetadata({ by: 'orders-w2', at }) }] },
    ],
    fetchTopicOffsets: async (topic: string) => (topic === 'orders' ? [{ partition: 0, offset: '9' }, { partition: 1, offset: '0' }] : [{ partition: 0, offset: '8' }]),
    listTopics: async () => [],
  } as unknown as AdminClient;
}

/** The probe's answer: on the repartition topic only a commit marker lies between the committed offset and the end. */
const scriptedProbe: LagProbe = {
  firstReadable: async (ranges) => new Map(ranges.map((r) => [`${r.topic}-${r.partition}`, r.topic === 'orders-totals-repartition' ? null : r.from])),
};

const noDeadLetters = { topic: 'orders-dlq', following: false, follow: () => undefined, takeError: () => undefined, summary: () => ({ topic: 'orders-dlq', following: false, total: 0, lastMinute: 0, latest: [] }) };

test('a refresh: members with their own numbers or why not, lag without the commit marker, and an empty group keeps its offsets', async () => {
  const worker = new FakeWorker({ instanceId: 'w1' });
  worker.state = 'RUNNING';
  const server = await startObservability(worker, { port: 0, host: '127.0.0.1', processMetrics: false });
  cleanups.push(() => server.close());
  const deadPort = await freePort();
  let now = 10_000;
  const members: ScriptedMember[] = [
    { clientId: 'orders-w1', partitions: [['orders', 0], ['orders', 1]] },
    { clientId: 'orders-w2', partitions: [['orders-totals-repartition', 0]] },
  ];
  const live = new LiveState({
    appId: 'orders',
    admin: scriptedAdmin({ state: 3, members }),
    deadLetters: noDeadLetters,
    memberUrls: [`http://127.0.0.1:${server.port}/metrics`],
    memberPort: deadPort,
    probe: scriptedProbe,
    now: () => now,
  });
  await live.refresh();
  worker.stats.transactionsCommitted = 6;
  worker.stats.recordsConsumed = 60;
  now += 2_000;
  const s = await live.refresh();

  assert.deepEqual([s.group.state, s.group.members], ['Stable', 2]);
  const [w1, w2] = s.members;
  assert.ok(w1?.metrics.reachable, 'w1 answers on the URL it was given');
  assert.deepEqual([w1.metrics.state, w1.metrics.commitsPerSecond, w1.metrics.recordsInPerSecond, w1.metrics.transactionsCommitted], ['RUNNING', 3, 30, 6]);
  assert.ok(w2 && !w2.metrics.reachable);
  assert.match(w2.metrics.reason, new RegExp(`http://127.0.0.1:${deadPort}/metrics unreachable .*showing the broker's view only`));
  assert.equal(w2.lastCommitAt, 1_700_000_000_000, "the broker's view: the last commit from the offsets' metadata");
  assert.deepEqual(s.eos, { committedLastMinute: 6, abortedLastMinute: 0, membersCounted: 1 });

  const lag = Object.fromEntries(s.partitions.map((p) => [`${p.topic}-${p.partition}`, [p.committed, p.end, p.lag]]));
  assert.deepEqual(lag, { 'orders-0': [5, 9, 4], 'orders-1': [undefined, 0, undefined], 'orders-totals-repartition-0': [7, 8, 0] });
  assert.deepEqual(s.partitions[0]?.lagHistory, [4, 4]);

  const emptied = await new LiveState({ appId: 'orders', admin: scriptedAdmin({ state: 5, members: [] }), deadLetters: noDeadLetters, probe: scriptedProbe }).refresh();
  assert.deepEqual([emptied.group.state, emptied.members.length], ['Empty', 0]);
  assert.deepEqual(emptied.partitions.map((p) => p.committed), [5, undefined, 7], 'the last committed offsets, with no worker running');
});
