import { test } from 'node:test';
import assert from 'node:assert/strict';
import { describeJson, describeTopology } from '../../src/cli/describe.ts';
import { topologyGraph } from '../../src/console/topology-graph.ts';
import { compile } from '../../src/graph/compile.ts';
import type { Windowed } from '../../src/dsl/types.ts';
import { TopologyTestDriver } from '../../src/testing/test-driver.ts';
import { clickBurstsTopology, type ClickBurstsOptions } from '../../topology/click-bursts.ts';
import type { Click } from '../../topology/sessions.ts';

// Golden output, as test/topology/describe.test.ts pins its examples': the store and topic names are
// what a running application finds its changelog by.
const BURSTS_TEXT = `Topology: click-bursts
Topologies:
   Sub-topology: 0 [stateful: its tasks and stores live on a processing thread under onceflow run (in-memory stores)]
    Source: KSTREAM-SOURCE-0000000000 (topics: [clicks]) [inside the Kafka transaction]
      --> bursts
    Processor: bursts (aggregate, stores: [bursts]) [inside the Kafka transaction]
      --> KTABLE-TOSTREAM-0000000002
      <-- KSTREAM-SOURCE-0000000000
    Processor: KTABLE-TOSTREAM-0000000002 (toStream, stores: []) [inside the Kafka transaction]
      --> KSTREAM-SINK-0000000003
      <-- bursts
    Sink: KSTREAM-SINK-0000000003 (topic: click-bursts) [inside the Kafka transaction]
      <-- KTABLE-TOSTREAM-0000000002
Stores:
  bursts (window, node bursts, sub-topology 0, changelog click-bursts-bursts-changelog, sliding window time difference 20ms grace 50ms)`;

const compiled = (opts?: ClickBurstsOptions) => compile(clickBurstsTopology(opts));

test('describe text of the click-bursts example (sliding windows) is pinned', () => {
  assert.ok(describeTopology(compiled(), 'text').startsWith(`${BURSTS_TEXT}\n`));
});

test('describe json and mermaid, and the console graph, show the sliding window of the store', () => {
  const d = describeJson(compiled());
  assert.deepEqual(d.stores.map((s) => [s.name, s.kind, s.window]), [['bursts', 'window', { type: 'sliding', sizeMs: 20, advanceMs: 1, graceMs: 50, emitFinal: false }]]);
  assert.match(describeTopology(compiled(), 'mermaid'), /n1\["bursts<br\/>aggregate<br\/>stores: bursts<br\/>sliding window time difference 20ms grace 50ms"\]/);
  const store = topologyGraph(d).nodes.find((n) => n.id === 'store:bursts')!;
  assert.deepEqual(store.details.find(([k]) => k === 'window'), ['window', 'sliding, time difference 20 ms, grace 50 ms']);
});

test('clicks per user in 20 ms sliding windows; an out-of-order click counts; a click no open window takes is late', () => {
  const driver = new TopologyTestDriver(clickBurstsTopology({ input: 'clicks', output: 'bursts' }));
  const clicks = driver.input<string, Click>('clicks');
  const output = driver.output<Windowed<string>, number>('bursts');
  const click = (user: string, at: number) => clicks.pipe(user, { user, at });
  click('u', 1000);
  click('u', 1010);
  click('u', 1005); // out of order: in [990,1010] and [1001,1021]; its own [985,1005] starts from 1000's
  const last = new Map(output.readKeyValues().map(([w, n]) => [`${w.key}@${w.start}-${w.end}`, n]));
  assert.deepEqual(Object.fromEntries(last), { 'u@980-1000': 1, 'u@990-1010': 3, 'u@1001-1021': 2, 'u@985-1005': 2, 'u@1006-1026': 1 });
  click('v', 1100); // stream time 1100: a window closes once stream time passes its end + 50
  click('u', 1025); // every window it could be in ends by 1045: late
  click('u', 1040); // its own [1020,1040] closed, and no open window holds it: late too
  click('u', 1060); // its own [1040,1060] is open: counted there
  assert.deepEqual(output.readKeyValues().map(([w, n]) => `${w.key}@${w.start}-${w.end}=${n}`), ['v@1080-1100=1', 'u@1040-1060=1']);
  assert.equal(driver.metrics().lateRecordsDropped, 2);
});
