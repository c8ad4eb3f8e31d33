import assert from 'node:assert/strict';
import { test } from 'node:test';
import { TopologyBuilder } from '../../../src/dsl/topology-builder.ts';
import { compile } from '../../../src/graph/index.ts';
import { keepsEveryRow, tableSourceTopics } from '../../../src/graph/table-source-topics.ts';
import type { TopicConfigAccess } from '../../../src/runtime/base/client-supplier.ts';
import type { WorkerEvent } from '../../../src/runtime/base/worker-events.ts';
import { checkTableSourceCompaction } from '../../../src/runtime/worker/table-source-check.ts';
import { stringSerde } from '../../../src/serdes/index.ts';

const access = (policies: Record<string, string>): TopicConfigAccess => ({
  describe: async (topics) => new Map(topics.flatMap((t) => (policies[t] === undefined ? [] : [[t, new Map([['cleanup.policy', policies[t]!]])] as const]))),
  set: async () => assert.fail('a user topic is never altered'),
});

test("a table's and a global table's source topics are the ones restored from; a stream's and an aggregate's changelog are not", () => {
  const app = new TopologyBuilder({ appId: 'tables' });
  const customers = app.table('customers', { key: stringSerde, value: stringSerde });
  const regions = app.globalTable('regions', { key: stringSerde, value: stringSerde });
  app
    .stream('orders', { key: stringSerde, value: stringSerde })
    .join(customers, (_k, order, customer) => `${order}:${customer}`, { value: stringSerde })
    .leftJoin(regions, (key) => key, (_k, v, region) => `${v}:${region ?? '?'}`, { value: stringSerde })
    .groupByKey()
    .count({ name: 'counts' });
  assert.deepEqual(tableSourceTopics(compile(app)), ['customers', 'regions']);
});

test('only compaction without deletion keeps every row', () => {
  assert.deepEqual(['compact', 'delete', 'compact,delete', 'delete, compact'].map(keepsEveryRow), [true, false, false, false]);
});

test('a table source topic that deletes is a warning naming the topic, its policy and the fix; a compacted one, a missing one and unreadable configs say nothing', async () => {
  const events: WorkerEvent[] = [];
  await checkTableSourceCompaction(['customers', 'regions', 'gone'], access({ customers: 'delete', regions: 'compact' }), (e) => events.push(e));
  assert.equal(events.length, 1);
  const [warning] = events;
  assert.ok(warning?.type === 'table-topic-not-compacted');
  assert.equal(warning.topic, 'customers');
  assert.equal(warning.policy, 'delete');
  assert.match(warning.fix, /kafka-configs\.sh .*--entity-name customers --add-config cleanup\.policy=compact.*onceflow topics create customers --compact/);

  const silent: WorkerEvent[] = [];
  await checkTableSourceCompaction(['customers'], 'security.protocol SASL_SSL: plaintext listeners only', (e) => silent.push(e));
  await checkTableSourceCompaction(['customers'], { describe: async () => Promise.reject(new Error('no broker answered')), set: async () => undefined }, (e) => silent.push(e));
  await checkTableSourceCompaction(['customers'], undefined, (e) => silent.push(e));
  assert.deepEqual(silent, []);
});
