import { test } from 'node:test';
import assert from 'node:assert/strict';
import { TopologyBuilder } from '../../src/dsl/topology-builder.ts';
import { SessionWindows } from '../../src/dsl/session-windows.ts';
import { Suppressed } from '../../src/dsl/suppress.ts';
import { compile } from '../../src/graph/index.ts';
import { describeJson, describeText } from '../../src/cli/describe.ts';
import { stringSerde } from '../../src/serdes/index.ts';

test('describe shows session windows, suppression and punctuations, in text and JSON', () => {
  const app = new TopologyBuilder({ appId: 'd' });
  const clicks = app.stream('clicks', { key: stringSerde, value: stringSerde });
  clicks
    .groupByKey()
    .windowedBy(SessionWindows.withInactivityGap(30_000).grace(5_000))
    .count({ name: 'sessions' })
    .suppress(Suppressed.untilWindowCloses({ maxRecords: 500 }), { name: 'final' })
    .toStream()
    .to('final-sessions');
  clicks.process({ name: 'heartbeat', punctuate: [{ on: 'wall-clock', everyMs: 1000, run: () => undefined }, { on: 'stream-time', everyMs: 60_000, run: () => undefined }] });
  const compiled = compile(app);
  const text = describeText(compiled);
  assert.match(text, /sessions \(session, node sessions, sub-topology 0, changelog d-sessions-changelog, session window gap 30000ms grace 5000ms\)/);
  assert.match(text, /Processor: final \(suppress, stores: \[final\], suppress until window closes, buffer at most 500 keys \/ 10485760 bytes, when full: error\)/);
  assert.match(text, /final \(suppress, node final, sub-topology 0, changelog d-final-changelog\)/);
  assert.match(text, /Processor: heartbeat \(process, stores: \[\], punctuates every 1000ms of wall-clock and every 60000ms of stream-time \(inside the transaction\)\)/);
  const json = describeJson(compiled);
  const nodes = json.subtopologies.flatMap((s) => s.nodes);
  assert.deepEqual(nodes.find((n) => n.name === 'final')?.suppress, { until: 'window-closes', maxRecords: 500, maxBytes: 10485760, whenFull: 'error' });
  assert.deepEqual(nodes.find((n) => n.name === 'heartbeat')?.punctuations, [{ on: 'wall-clock', everyMs: 1000 }, { on: 'stream-time', everyMs: 60_000 }]);
  assert.deepEqual(json.stores.find((s) => s.name === 'sessions')?.session, { inactivityGapMs: 30_000, graceMs: 5_000, emitFinal: false });
});
