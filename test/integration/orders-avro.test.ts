import assert from 'node:assert/strict';
import { after, test } from 'node:test';
import { connectProducer, disconnect, flush } from '../../src/kafka/clients.ts';
import { readTopic } from '../../src/kafka/read-topic.ts';
import type { IncomingRecord } from '../../src/core/records.ts';
import { ordersInput } from '../../src/verify/orders-input.ts';
import { pipelines } from '../../src/verify/pipelines.ts';
import { orderSerde } from '../../topology/orders.ts';
import type { Order } from '../../processors/orders.ts';
import { testCluster } from '../support/cluster.ts';
import { TestRun } from '../support/runs.ts';

const run = new TestRun('orders', 3, { ONCEFLOW_ORDERS_FORMAT: 'avro' });
after(() => run.stopAll());

test('topology/orders.ts switched to registry Avro by configuration alone; undecodable records go to the DLQ with their error', async () => {
  const { registryUrl } = testCluster();
  await run.createTopics();
  const orders = ordersInput({ records: 600, seed: 21 }).map((r) => ({ key: r.key, order: JSON.parse(r.value) as Order }));
  const serde = orderSerde('avro');
  const ctx = { topic: run.input, role: 'value' } as const;
  await serde.prepare?.(ctx, { registryUrl });
  const good = (i: number) => serde.serialize(orders[i]!.order, ctx)!;
  const poison = [
    { code: 'WIRE_MAGIC_BYTE', bytes: Buffer.concat([Buffer.from([1]), good(0).subarray(1)]) },
    { code: 'SCHEMA_NOT_FOUND', bytes: Buffer.concat([Buffer.from([0, 0x7f, 0xff, 0xff, 0xf0]), good(0).subarray(5)]) },
    { code: 'AVRO_TRUNCATED', bytes: good(0).subarray(0, 9) },
  ];
  const producer = await connectProducer({ 'bootstrap.servers': run.bootstrap, 'enable.idempotence': true, 'partitioner': 'murmur2_random' });
  orders.forEach((o, i) => {
    producer.produce(run.input, null, good(i), o.key, Date.now());
    const p = poison[Math.floor(i / 200)];
    if (i % 200 === 100 && p) producer.produce(run.input, null, p.bytes, `poison-${p.code}`, Date.now(), null, [{ 'test.expected': p.code }]);
  });
  await flush(producer, 30_000);
  await disconnect(producer);

  const worker = run.startWorker('a');
  await worker.waitFor((e) => e.type === 'assigned', 60_000, 'assignment');
  await run.caughtUp();

  // Expected totals from the same events, in the order each order's events were produced.
  const asJson: IncomingRecord[] = orders.map((o, i) => ({ topic: run.input, partition: 0, offset: i, key: Buffer.from(o.key), value: Buffer.from(JSON.stringify(o.order)), timestamp: 0, headers: [] }));
  const expected = pipelines.orders.model.expectedFinal!(asJson);
  const got = new Map<string, string>();
  for (const r of (await readTopic(run.bootstrap, run.output)).sort((a, b) => a.partition - b.partition || a.offset - b.offset)) got.set(r.key!.toString(), r.value!.toString());
  assert.deepEqual(got, expected);

  const { deadLetter } = await run.internalTopics();
  const dlq = await readTopic(run.bootstrap, deadLetter);
  const header = (r: IncomingRecord, k: string) => r.headers.find((h) => h.key === k)?.value.toString();
  assert.deepEqual(dlq.map((r) => header(r, 'onceflow.error.code')).sort(), poison.map((p) => p.code).sort());
  for (const r of dlq) {
    assert.equal(header(r, 'test.expected'), header(r, 'onceflow.error.code'), 'original headers are kept');
    assert.equal(header(r, 'onceflow.source.topic'), run.input);
    assert.ok(poison.some((p) => p.bytes.equals(r.value!)), 'original bytes are kept');
  }
});
