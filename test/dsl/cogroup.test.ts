import { test } from 'node:test';
import assert from 'node:assert/strict';
import { TopologyBuilder } from '../../src/dsl/topology-builder.ts';
import { hoppingWindow, tumblingWindow } from '../../src/dsl/windows.ts';
import { slidingWindow } from '../../src/dsl/sliding-windows.ts';
import { Suppressed } from '../../src/dsl/suppress.ts';
import type { Windowed, WindowSpec } from '../../src/dsl/types.ts';
import { compile } from '../../src/graph/compile.ts';
import { describeJson, describeMermaid, describeText } from '../../src/cli/describe.ts';
import { topologyGraph } from '../../src/console/topology-graph.ts';
import { jsonSerde, stringSerde } from '../../src/serdes/index.ts';
import { TopologyTestDriver } from '../../src/testing/test-driver.ts';

interface Click { readonly user: string; readonly page: string }
interface Purchase { readonly user: string; readonly amount: number }
interface Activity { readonly clicks: number; readonly spent: number }

const NONE: Activity = { clicks: 0, spent: 0 };
const stateSerde = jsonSerde<Activity>();

/** Clicks keyed by session, re-keyed by user; purchases already keyed by user. */
function activityApp(window?: WindowSpec) {
  const app = new TopologyBuilder({ appId: 'shop' });
  const clicks = app.stream('clicks', { key: stringSerde, value: jsonSerde<Click>() }).groupBy((_session, click) => click.user, { key: stringSerde });
  const purchases = app.stream('purchases', { key: stringSerde, value: jsonSerde<Purchase>() }).groupByKey();
  const cogrouped = clicks
    .cogroup((_user, _click, activity: Activity) => ({ ...activity, clicks: activity.clicks + 1 }))
    .cogroup(purchases, (_user, purchase, activity) => ({ ...activity, spent: activity.spent + purchase.amount }));
  return { app, cogrouped };
}

test('cogroup folds several grouped streams into one aggregate per key, in one store', () => {
  const { app, cogrouped } = activityApp();
  cogrouped.aggregate(() => NONE, { state: stateSerde, name: 'activity' }).toStream().to('activity', { value: stateSerde });
  const driver = new TopologyTestDriver(app);
  const clicks = driver.input<string, Click>('clicks');
  const purchases = driver.input<string, Purchase>('purchases');
  const output = driver.output<string, Activity>('activity');
  clicks.pipe('s1', { user: 'ann', page: '/' }, { timestamp: 100 });
  purchases.pipe('ann', { user: 'ann', amount: 30 }, { timestamp: 110 });
  clicks.pipe('s2', { user: 'bob', page: '/' }, { timestamp: 120 });
  // Out of order and far behind stream time: a key-value aggregate has no windows, so no grace; it counts.
  purchases.pipe('ann', { user: 'ann', amount: 5 }, { timestamp: 1 });
  assert.deepEqual(output.readKeyValues(), [
    ['ann', { clicks: 1, spent: 0 }],
    ['ann', { clicks: 1, spent: 30 }],
    ['bob', { clicks: 1, spent: 0 }],
    ['ann', { clicks: 1, spent: 35 }],
  ]);
  assert.deepEqual(driver.store<string, Activity>('activity').get('ann'), { clicks: 1, spent: 35 });
  assert.equal(driver.metrics().lateRecordsDropped, 0);
  // the clicks went through a repartition topic of their own, keyed by user; the purchases did not need one
  assert.deepEqual(driver.records('shop-activity-0-repartition').map((r) => r.key?.toString()), ['ann', 'bob']);
  assert.deepEqual(driver.records('shop-activity-changelog').length, 4);
});

test('with a record cache the inputs share it: one update per key per commit, the latest whichever input made it', () => {
  const app = new TopologyBuilder({ appId: 'shop' });
  const clicks = app.stream('clicks', { key: stringSerde, value: jsonSerde<Click>() }).groupByKey();
  const purchases = app.stream('purchases', { key: stringSerde, value: jsonSerde<Purchase>() }).groupByKey();
  clicks
    .cogroup((_user, _click, activity: Activity) => ({ ...activity, clicks: activity.clicks + 1 }))
    .cogroup(purchases, (_user, purchase, activity) => ({ ...activity, spent: activity.spent + purchase.amount }))
    .aggregate(() => NONE, { state: stateSerde, name: 'activity' })
    .toStream()
    .to('activity', { value: stateSerde });
  const driver = new TopologyTestDriver(app, { autoCommit: false, cacheMaxRecords: 100 });
  const output = driver.output<string, Activity>('activity');
  driver.input<string, Click>('clicks').pipe('ann', { user: 'ann', page: '/' }, { timestamp: 100 });
  driver.input<string, Purchase>('purchases').pipe('ann', { user: 'ann', amount: 30 }, { timestamp: 110 });
  driver.input<string, Click>('clicks').pipe('ann', { user: 'ann', page: '/a' }, { timestamp: 105 });
  driver.input<string, Purchase>('purchases').pipe('ann', { user: 'ann', amount: 5 }, { timestamp: 106 });
  assert.deepEqual(output.readKeyValues(), []);
  driver.commit();
  assert.deepEqual(output.readKeyValues(), [['ann', { clicks: 2, spent: 35 }]]);
});

test('windowed cogroup: tumbling windows with grace; an out-of-order record within grace counts, a later one is dropped', () => {
  const { app, cogrouped } = activityApp();
  cogrouped.windowedBy(tumblingWindow(100, { graceMs: 20, lateRecords: 'dead-letter' })).aggregate(() => NONE, { state: stateSerde, name: 'activity-per-window' }).toStream().to('activity', { value: stateSerde });
  const driver = new TopologyTestDriver(app);
  const clicks = driver.input<string, Click>('clicks');
  const purchases = driver.input<string, Purchase>('purchases');
  const output = driver.output<Windowed<string>, Activity>('activity');
  const read = () => output.readKeyValues().map(([w, a]) => `${w.key}@${w.start}=${a.clicks}/${a.spent}`);
  clicks.pipe('s1', { user: 'ann', page: '/' }, { timestamp: 50 });
  purchases.pipe('ann', { user: 'ann', amount: 30 }, { timestamp: 110 }); // stream time 110 (purchases' task)
  purchases.pipe('ann', { user: 'ann', amount: 7 }, { timestamp: 90 }); // out of order, [0,100) closes at 120: counts
  purchases.pipe('bob', { user: 'bob', amount: 1 }, { timestamp: 125 }); // [0,100) closes
  purchases.pipe('ann', { user: 'ann', amount: 9 }, { timestamp: 95 }); // late
  assert.deepEqual(read(), ['ann@0=1/0', 'ann@100=0/30', 'ann@0=1/7', 'bob@100=0/1']);
  assert.equal(driver.metrics().lateRecordsDropped, 1);
  assert.deepEqual(driver.deadLetters().map((d) => d.code), ['LATE_RECORD']);
});

test('windowed cogroup over hopping windows, with its final results through suppress', () => {
  const { app, cogrouped } = activityApp();
  cogrouped
    .windowedBy(hoppingWindow(100, 50))
    .aggregate(() => NONE, { state: stateSerde, name: 'activity-per-window' })
    .suppress(Suppressed.untilWindowCloses())
    .toStream()
    .to('activity', { value: stateSerde });
  const driver = new TopologyTestDriver(app);
  const clicks = driver.input<string, Click>('clicks');
  const purchases = driver.input<string, Purchase>('purchases');
  const output = driver.output<Windowed<string>, Activity>('activity');
  purchases.pipe('ann', { user: 'ann', amount: 30 }, { timestamp: 60 }); // [0,100) and [50,150)
  clicks.pipe('s1', { user: 'ann', page: '/' }, { timestamp: 70 });
  purchases.pipe('ann', { user: 'ann', amount: 1 }, { timestamp: 100 }); // [0,100) closes; [50,150) and [100,200) open
  assert.deepEqual(output.readKeyValues().map(([w, a]) => `${w.key}@${w.start}=${a.clicks}/${a.spent}`), ['ann@0=1/30']);
});

test('cogroup compiles to one node reading every input, its store, one repartition topic per re-keyed input and a co-partition group', () => {
  const { app, cogrouped } = activityApp();
  cogrouped.aggregate(() => NONE, { state: stateSerde, name: 'activity' });
  const d = describeJson(compile(app));
  const node = d.subtopologies.flatMap((s) => s.nodes).find((n) => n.kind === 'cogroup')!;
  assert.equal(node.name, 'activity');
  assert.deepEqual(node.stores, ['activity']);
  assert.deepEqual(node.predecessors, ['activity-0-repartition-source', 'KSTREAM-SOURCE-0000000002']);
  assert.deepEqual(d.copartitionGroups, [{ join: 'activity', subtopology: 1, topics: ['purchases', 'shop-activity-0-repartition'] }]);
  assert.ok(d.topics.some((t) => t.name === 'shop-activity-0-repartition' && t.kind === 'repartition'));
  const compiled = compile(app);
  const text = describeText(compiled);
  assert.match(text, /Processor: activity \(cogroup, stores: \[activity\]\)/);
  assert.match(text, /<-- activity-0-repartition-source, KSTREAM-SOURCE-0000000002/);
  assert.match(text, /Co-partition groups [^\n]*\n {2}activity \(sub-topology 1\): \[purchases, shop-activity-0-repartition\]/);
  assert.match(describeMermaid(compiled), /\["activity<br\/>cogroup<br\/>stores: activity"\]/);
  // the console draws both inputs into the one stage, and its store
  const graph = topologyGraph(d);
  const into = graph.edges.filter((e) => e.to === 'stage:activity').map((e) => e.from).sort();
  assert.deepEqual(into, ['stage:KSTREAM-SOURCE-0000000002', 'stage:activity-0-repartition-source']);
  assert.equal(graph.nodes.find((n) => n.id === 'stage:activity')!.sublabel, 'cogroup');
  assert.ok(graph.edges.some((e) => e.from === 'stage:activity' && e.to === 'store:activity'));
});

test('cogroup refuses the same grouped stream twice and sliding windows', () => {
  const app = new TopologyBuilder({ appId: 'bad' });
  const grouped = app.stream('clicks', { key: stringSerde, value: jsonSerde<Click>() }).groupByKey();
  grouped.cogroup((_k, _v, n: number) => n + 1).cogroup(grouped, (_k, _v, n) => n + 2).aggregate(() => 0, { state: jsonSerde<number>() });
  assert.throws(() => compile(app), { code: 'INVALID_STAGE_OPTION' });
  const sliding = new TopologyBuilder({ appId: 'bad' });
  const other = sliding.stream('clicks', { key: stringSerde, value: jsonSerde<Click>() }).groupByKey();
  other.cogroup((_k, _v, n: number) => n + 1).windowedBy(slidingWindow(10)).aggregate(() => 0, { state: jsonSerde<number>() });
  assert.throws(() => compile(sliding), { code: 'INVALID_WINDOW' });
});
