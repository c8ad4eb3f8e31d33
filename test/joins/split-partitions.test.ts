import { test } from 'node:test';
import assert from 'node:assert/strict';
import { TopologyBuilder } from '../../src/dsl/topology-builder.ts';
import { compile } from '../../src/graph/index.ts';
import { parseWorkerConfig } from '../../src/runtime/base/config.ts';
import type { WorkerServices } from '../../src/runtime/base/worker-services.ts';
import { TaskManager } from '../../src/runtime/task/task-manager.ts';
import { runtimeTopology } from '../../src/runtime/task/worker-topology.ts';
import { stringSerde } from '../../src/serdes/index.ts';

function manager(): TaskManager {
  const app = new TopologyBuilder({ appId: 'split' });
  const table = app.table('customers', { key: stringSerde, value: stringSerde });
  app.stream('orders', { key: stringSerde, value: stringSerde }).join(table, (_k, o, c) => `${o}${c}`, { name: 'enrich', value: stringSerde }).to('out');
  const config = { ...parseWorkerConfig({ bootstrap: 'unused:9092', appId: 'split' }), instanceId: 'a' };
  const context = { config, stats: {}, emit: () => undefined } as unknown as WorkerServices;
  return new TaskManager(runtimeTopology(compile(app)), context);
}

test('a join task handed partition N of one input but not of the other refuses to run (JOIN_PARTITIONS_SPLIT)', () => {
  assert.throws(
    () => manager().addSources([{ topic: 'orders', partition: 1 }], new Map()),
    (e: unknown) => (e as { code?: string }).code === 'JOIN_PARTITIONS_SPLIT' && /customers-1/.test((e as Error).message),
  );
});

test('a join task handed partition N of both inputs runs', () => {
  const tasks = manager().addSources([{ topic: 'orders', partition: 1 }, { topic: 'customers', partition: 1 }, { topic: 'orders', partition: 2 }, { topic: 'customers', partition: 2 }], new Map());
  assert.equal(tasks.length, 2);
});
