import assert from 'node:assert/strict';
import { test } from 'node:test';
import { describeTopology } from '../../src/cli/describe.ts';
import { readTopicConfigs } from '../../src/cli/describe-topic-configs.ts';
import { TopologyBuilder } from '../../src/dsl/topology-builder.ts';
import { compile } from '../../src/graph/index.ts';
import type { WorkerEvent } from '../../src/runtime/base/worker-events.ts';
import { runtimeTopology } from '../../src/runtime/task/worker-topology.ts';
import { Worker } from '../../src/runtime/worker/worker.ts';
import { stringSerde } from '../../src/serdes/index.ts';
import { createTopics, testCluster, uniqueName } from '../support/cluster.ts';

test("a table's source topic created with cleanup.policy=delete is a start-up warning naming it and the fix, a compacted one is not; describe with a bootstrap shows the broker's cleanup.policy and marks what it does not have yet", async () => {
  const { bootstrap } = testCluster();
  const t = { orders: uniqueName('orders'), customers: uniqueName('customers-deleting'), regions: uniqueName('regions-compacted'), out: uniqueName('out') };
  const appId = uniqueName('app-table-compaction');
  await createTopics(bootstrap, [
    { name: t.orders, partitions: 2 },
    { name: t.customers, partitions: 2 },
    { name: t.regions, partitions: 1, compact: true },
    { name: t.out, partitions: 2 },
  ]);
  const app = new TopologyBuilder({ appId });
  const customers = app.table(t.customers, { key: stringSerde, value: stringSerde });
  const regions = app.globalTable(t.regions, { key: stringSerde, value: stringSerde });
  app
    .stream(t.orders, { key: stringSerde, value: stringSerde })
    .join(customers, (_key, order, customer) => `${order}:${customer}`, { value: stringSerde })
    .leftJoin(regions, (key) => key, (_key, value, region) => `${value}:${region ?? '?'}`, { value: stringSerde })
    .groupByKey()
    .count({ name: 'counts' })
    .toStream()
    .mapValues((count) => String(count), { value: stringSerde })
    .to(t.out);
  const compiled = compile(app);

  // Before the first start: the changelog does not exist yet, so its configs are the intent.
  const before = describeTopology(compiled, 'text', await readTopicConfigs(compiled.topics, { bootstrap, clientOptions: {} }));
  assert.match(before, new RegExp(`Topics \\(configs as the broker at ${bootstrap} applies them`));
  assert.ok(before.includes(`  ${t.regions} (source, external, cleanup.policy=compact)`), before);
  assert.ok(before.includes(`  ${t.customers} (source, external, cleanup.policy=delete)`), before);
  assert.match(before, new RegExp(`${appId}-counts-changelog \\(changelog, internal, cleanup\\.policy=compact, .*intended`));
  assert.match(before, new RegExp(`Warnings:[\\s\\S]*table source topic ${t.customers} has cleanup\\.policy=delete`));
  assert.doesNotMatch(before, new RegExp(`table source topic ${t.regions}`));

  const worker = new Worker(runtimeTopology(compiled), { bootstrap, appId, instanceId: 'only' });
  const events: WorkerEvent[] = [];
  worker.on('event', (e: WorkerEvent) => events.push(e));
  try {
    await worker.start();
  } finally {
    await worker.stop();
  }
  const warnings = events.filter((e) => e.type === 'table-topic-not-compacted');
  assert.equal(warnings.length, 1, JSON.stringify(warnings));
  const [warning] = warnings;
  assert.ok(warning?.type === 'table-topic-not-compacted');
  assert.equal(warning.topic, t.customers);
  assert.equal(warning.policy, 'delete');
  assert.match(warning.fix, new RegExp(`--entity-name ${t.customers} --add-config cleanup\\.policy=compact`));
  assert.ok(events.some((e) => e.type === 'started'), 'the warning does not stop the worker');

  // After it: the changelog the worker created is read, no longer intended.
  const after = describeTopology(compiled, 'text', await readTopicConfigs(compiled.topics, { bootstrap, clientOptions: {} }));
  assert.match(after, new RegExp(`${appId}-counts-changelog \\(changelog, internal, cleanup\\.policy=compact, [^)]*\\)`));
  assert.doesNotMatch(after, /, intended/);
});
