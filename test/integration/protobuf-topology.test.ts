import assert from 'node:assert/strict';
import { after, test } from 'node:test';
import { readTopic } from '../../src/kafka/read-topic.ts';
import { produceAll } from '../../src/verify/orders-input.ts';
import { waitCaughtUp } from '../../src/verify/progress.ts';
import { WorkerProcess } from '../../src/verify/worker-process.ts';
import { registryProtobufSerde } from '../../src/serdes/index.ts';
import { PAYMENT_PROTO, type Payment } from '../fixtures/protobuf-payments.ts';
import { createTopics, testCluster, uniqueName } from '../support/cluster.ts';

const workers: WorkerProcess[] = [];
after(() => Promise.all(workers.map((w) => w.stop())));

test('a topology with a registry Protobuf value serde on the broker: records processed, one poison record dead-lettered with PROTOBUF_INVALID', async () => {
  const { bootstrap, registryUrl } = testCluster();
  const names = { input: uniqueName('pb-in'), output: uniqueName('pb-out'), appId: uniqueName('pb') };
  await createTopics(bootstrap, [{ name: names.input, partitions: 2 }, { name: names.output, partitions: 2 }]);
  const serde = registryProtobufSerde<Payment>({ schema: PAYMENT_PROTO });
  const ctx = { topic: names.input, role: 'value' } as const;
  await serde.prepare?.(ctx, { registryUrl });
  const payments: Payment[] = Array.from({ length: 20 }, (_, i) => ({ id: `p-${i}`, cents: 2n ** 53n + BigInt(i), currency: i % 4 === 3 ? 'USD' : 'EUR' }));
  const good = payments.map((p) => ({ key: p.id, value: serde.serialize(p, ctx)! }));
  // Framed like the others, but the body stops inside a length-delimited field.
  const poison = Buffer.concat([good[0]!.value.subarray(0, 6), Buffer.from([0x0a, 0x10, 0x61])]);
  await produceAll(bootstrap, names.input, [...good.slice(0, 10), { key: 'poison', value: poison }, ...good.slice(10)]);

  const worker = new WorkerProcess('a', 'test/fixtures/protobuf-payments.ts', ['--app-id', names.appId, '--instance-id', 'a', '--registry-url', registryUrl], {
    ONCEFLOW_BOOTSTRAP: bootstrap,
    PB_INPUT: names.input,
    PB_OUTPUT: names.output,
  });
  workers.push(worker);
  await worker.waitFor((e) => e.type === 'dead-lettered', 120_000, 'the dead letter');
  await waitCaughtUp({ bootstrap, groupId: names.appId, plainTopics: [names.input] });

  const out = await readTopic(bootstrap, names.output);
  const expected = payments.filter((p) => p.currency === 'EUR').map((p) => `${p.id}=${JSON.stringify({ id: p.id, doubled: (p.cents * 2n).toString() })}`);
  assert.deepEqual(out.map((r) => `${r.key?.toString()}=${r.value?.toString()}`).sort(), expected.sort());
  const dlq = await readTopic(bootstrap, `${names.appId}-dlq`);
  assert.equal(dlq.length, 1);
  const header = (k: string) => dlq[0]!.headers.find((h) => h.key === k)?.value.toString();
  assert.equal(header('onceflow.error.code'), 'PROTOBUF_INVALID');
  assert.ok(dlq[0]!.value?.equals(poison), 'the original bytes are kept');
});
