import assert from 'node:assert/strict';
import { test } from 'node:test';
import { setTimeout as sleep } from 'node:timers/promises';
import { TopologyBuilder } from '../../src/dsl/topology-builder.ts';
import { compile } from '../../src/graph/index.ts';
import { readTopic } from '../../src/kafka/read-topic.ts';
import { Worker } from '../../src/runtime/worker/worker.ts';
import { runtimeTopology } from '../../src/runtime/task/worker-topology.ts';
import { jsonSerde, stringSerde } from '../../src/serdes/index.ts';
import { produceAll } from '../../src/verify/orders-input.ts';
import { waitCaughtUp } from '../../src/verify/progress.ts';
import { createTopics, testCluster, uniqueName } from '../support/cluster.ts';

interface Product {
  readonly name: string;
}
interface Line {
  readonly lineId: string;
  readonly product: string;
}

test('a global table is read whole before processing and followed while the worker runs; its partition count need not match', async () => {
  const { bootstrap } = testCluster();
  const products = uniqueName('products');
  const lines = uniqueName('lines');
  const out = uniqueName('named-lines');
  const appId = uniqueName('app-global');
  await createTopics(bootstrap, [
    { name: products, partitions: 2 },
    { name: lines, partitions: 3 },
    { name: out, partitions: 3 },
  ]);
  const app = new TopologyBuilder({ appId });
  const table = app.globalTable(products, { key: stringSerde, value: jsonSerde<Product>() });
  app
    .stream(lines, { key: stringSerde, value: jsonSerde<Line>() })
    .leftJoin(table, (_id, line) => line.product, (_id, line, product) => `${line.lineId}:${product?.name ?? '?'}`, { value: stringSerde })
    .to(out);
  await produceAll(bootstrap, products, Array.from({ length: 20 }, (_, i) => ({ key: `p${i}`, value: JSON.stringify({ name: `product ${i}` }) })));
  const worker = new Worker(runtimeTopology(compile(app)), { bootstrap, appId, instanceId: 'only' });
  await worker.start();
  const joined = async (): Promise<Map<string, string>> => new Map((await readTopic(bootstrap, out, { isolation: 'read_committed' })).map((r) => [r.key!.toString(), r.value!.toString()]));
  try {
    await produceAll(bootstrap, lines, Array.from({ length: 60 }, (_, i) => ({ key: `l${i}`, value: JSON.stringify({ lineId: `l${i}`, product: `p${i % 25}` }) })));
    await waitCaughtUp({ bootstrap, groupId: appId, plainTopics: [lines], stableMs: 1_000 });
    const first = await joined();
    assert.equal(first.size, 60);
    for (let i = 0; i < 60; i++) assert.equal(first.get(`l${i}`), `l${i}:${i % 25 < 20 ? `product ${i % 25}` : '?'}`, 'every product loaded before the first line was processed');

    // An update reaches the running worker between batches: probe until a line sees it.
    await produceAll(bootstrap, products, [
      { key: 'p21', value: 'not json' },
      { key: 'p21', value: JSON.stringify({ name: 'late product' }) },
    ]);
    let seen: string | undefined;
    for (let probe = 0; probe < 200 && seen !== 'probe:late product'; probe++) {
      await produceAll(bootstrap, lines, [{ key: `probe-${probe}`, value: JSON.stringify({ lineId: 'probe', product: 'p21' }) }]);
      await waitCaughtUp({ bootstrap, groupId: appId, plainTopics: [lines], stableMs: 200 });
      seen = (await joined()).get(`probe-${probe}`);
      if (seen !== 'probe:late product') await sleep(100);
    }
    assert.equal(seen, 'probe:late product');
  } finally {
    await worker.stop();
  }
});
