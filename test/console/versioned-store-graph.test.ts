import assert from 'node:assert/strict';
import { test } from 'node:test';
import { describeJson } from '../../src/cli/describe.ts';
import { topologyGraph } from '../../src/console/topology-graph.ts';
import { TopologyBuilder } from '../../src/dsl/topology-builder.ts';
import { compile } from '../../src/graph/index.ts';
import { jsonSerde, stringSerde } from '../../src/serdes/index.ts';

test("the console's graph shows a versioned table's store with its history retention", () => {
  const app = new TopologyBuilder({ appId: 'g' });
  const rates = app.table('rates', { key: stringSerde, value: jsonSerde<number>(), store: 'rates', versioned: { historyRetentionMs: 60_000 } });
  app.stream('payments', { key: stringSerde, value: jsonSerde<number>() }).join(rates, (_k, amount, rate) => amount * rate, { value: jsonSerde<number>() }).to('priced');
  const store = topologyGraph(describeJson(compile(app))).nodes.find((n) => n.kind === 'store' && n.name === 'rates');
  assert.equal(store?.sublabel, 'versioned store');
  assert.deepEqual(store?.details.find(([name]) => name === 'history retention'), ['history retention', '60000 ms']);
});
