import assert from 'node:assert/strict';
import { test } from 'node:test';
import { fileURLToPath } from 'node:url';
import type { IncomingRecord } from '../../src/core/records.ts';
import { loadTopology } from '../../src/dsl/load.ts';
import { compile } from '../../src/graph/compile.ts';
import { spawnProcessingThread } from '../../src/cli/processing-thread.ts';
import { ProcessingThread } from '../../src/runtime/offload/processing-thread.ts';
import { forEachOutput, packRun } from '../../src/runtime/offload/record-transfer.ts';
import { createTask } from '../../src/runtime/task/task.ts';
import { registryAvroSerde } from '../../src/serdes/index.ts';
import { ORDER_V1 } from '../fixtures/avro-shipped.ts';
import { testCluster } from '../support/cluster.ts';

test('the real processing thread runs a registry Avro topology: its own registry client, an unseen writer schema fetched there, the bytes the main thread makes', async () => {
  const { registryUrl } = testCluster();
  const file = fileURLToPath(new URL('../fixtures/avro-shipped.ts', import.meta.url));
  const main = compile(await loadTopology(file));
  for (const { serde, ctx } of main.serdeUsages()) await serde.prepare?.(ctx, { registryUrl });
  const inValue = { topic: 'thread-avro-in', role: 'value' } as const;
  const v1 = registryAvroSerde<{ orderId: string; amount: number }>({ schema: ORDER_V1 });
  await v1.prepare!(inValue, { registryUrl });
  const records: IncomingRecord[] = (
    [['a', 5], ['b', 50], ['c', 500], ['d', 7]] as const
  ).map(([orderId, amount], i) => ({ topic: 'thread-avro-in', partition: 0, offset: i, key: Buffer.from(`k${i}`), value: v1.serialize({ orderId, amount }, inValue), timestamp: 100 + i, headers: [] }));

  const started = await ProcessingThread.start(spawnProcessingThread, { file, registryUrl, messageMaxBytes: 1_000_000, topicMaxMessageBytes: {} }, main.subtopologies.map((s) => s.sourceTopics));
  assert.ok(started instanceof ProcessingThread, String(started));
  try {
    assert.deepEqual([...started.offloadable], [0]);
    const results = await started.process([{ subtopology: 0, run: packRun('thread-avro-in', 0, records), streamTime: Number.NEGATIVE_INFINITY }]);
    assert.ok(results !== undefined, started.failure);
    assert.equal(results[0]!.processed, 4);
    const onThread: string[] = [];
    forEachOutput(results[0]!.outputs, (o, input) => onThread.push(`${input}:${o.topic}:${o.key?.toString()}=${o.value?.toString('hex')}`));

    const direct: string[] = [];
    const task = createTask(main, 0, 0);
    for (const [i, r] of records.entries()) await task.process(r, { send: (o) => void direct.push(`${i}:${o.topic}:${o.key?.toString()}=${o.value?.toString('hex')}`) });
    assert.equal(onThread.length, 2);
    assert.deepEqual(onThread, direct);
  } finally {
    await started.close();
  }
});
