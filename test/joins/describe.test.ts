import { test } from 'node:test';
import assert from 'node:assert/strict';
import { TopologyBuilder } from '../../src/dsl/topology-builder.ts';
import { JoinWindows } from '../../src/dsl/windows.ts';
import { compile } from '../../src/graph/index.ts';
import { describeJson, describeMermaid, describeText } from '../../src/cli/describe.ts';
import { jsonSerde, stringSerde } from '../../src/serdes/index.ts';
import { tumblingWindow } from '../../src/dsl/windows.ts';

function joins() {
  const app = new TopologyBuilder({ appId: 'j' });
  const customers = app.table('customers', { key: stringSerde, value: jsonSerde<{ segment: string }>(), store: 'customers' });
  const countries = app.globalTable('countries', { key: stringSerde, value: stringSerde, store: 'countries' });
  const orders = app.stream('orders', { key: stringSerde, value: jsonSerde<{ country: string }>() });
  const payments = app.stream('payments', { key: stringSerde, value: jsonSerde<number>() });
  orders.join(customers, (_k, o, c) => `${o.country}/${c.segment}`, { name: 'with-customer', value: stringSerde }).to('a');
  orders.join(countries, (_k, o) => o.country, (_k, _o, name) => name ?? '', { name: 'with-country', value: stringSerde }).to('b');
  orders.leftJoin(payments, (_k, _o, p) => p ?? 0, JoinWindows.of(1000), { name: 'with-payment', value: jsonSerde<number>() }).to('c');
  return app;
}

test('describe shows each join, the tables it reads, its window stores, its co-partition group and the global tables, in text, JSON and Mermaid', () => {
  const compiled = compile(joins());
  const text = describeText(compiled);
  assert.match(text, /Processor: with-customer \(streamTableJoin, stores: \[\], reads tables: \[KTABLE-TOTABLE-\d+\]\)/);
  assert.match(text, /Processor: with-country \(globalTableJoin, stores: \[\], reads global table: countries\)/);
  assert.match(text, /Processor: with-payment \(streamStreamJoin, stores: \[with-payment-this, with-payment-other\]\)/);
  assert.match(text, /customers \(key-value, node KTABLE-TOTABLE-\d+, sub-topology 0, changelog customers \(its source topic\)\)/);
  assert.match(text, /Global tables .*\n {2}countries \(node KSTREAM-GLOBALTABLE-\d+, topic countries\)/);
  assert.match(text, /Co-partition groups .*\n {2}with-customer \(sub-topology 0\): \[customers, orders, payments\]/);
  assert.match(text, /Sub-topology: 0 \[inputs taken in timestamp order, waiting for an input that is behind \(maxTaskIdleMs\)\]/);
  const json = describeJson(compiled);
  assert.deepEqual(
    json.subtopologies.map((s) => s.synchronizesInputs),
    json.subtopologies.map((s) => s.id === 0),
  );
  assert.deepEqual(
    json.copartitionGroups.map((g) => g.join),
    ['with-customer', 'with-payment'],
  );
  assert.deepEqual(json.globalTables, [{ store: 'countries', node: json.globalTables[0]!.node, topic: 'countries' }]);
  assert.deepEqual(json.stores.filter((s) => s.kind === 'join-window').map((s) => s.changelogTopic), ['j-with-payment-this-changelog', 'j-with-payment-other-changelog']);
  const mermaid = describeMermaid(compiled);
  assert.match(mermaid, /\[\["countries<br\/>global table"\]\]/);
});

test('a join with a windowed aggregate is refused at compile time', () => {
  const app = new TopologyBuilder({ appId: 'w' });
  const counts = app.stream('clicks', { key: stringSerde, value: stringSerde }).groupByKey().windowedBy(tumblingWindow(1000)).count();
  app.stream('views', { key: stringSerde, value: stringSerde }).join(counts as never, (_k: unknown, v: unknown) => v, { value: stringSerde }).to('out');
  assert.throws(() => compile(app), (e: unknown) => (e as { code?: string }).code === 'JOIN_INPUT_NOT_TABLE');
});
