import assert from 'node:assert/strict';
import { test } from 'node:test';
import { connectProducer, disconnect, flush } from '../../src/kafka/clients.ts';
import { readTopic } from '../../src/kafka/read-topic.ts';
import { replayDeadLetters } from '../../src/dlq/dead-letters.ts';
import { Readiness } from '../../src/observability/health.ts';
import { Worker } from '../../src/runtime/worker/worker.ts';
import { runtimeTopology } from '../../src/runtime/task/worker-topology.ts';
import { DEAD_LETTER_EXCERPT_BYTES } from '../../src/core/record-size.ts';
import { waitCaughtUp } from '../../src/verify/progress.ts';
import { createTopics } from '../support/cluster.ts';
import { mapValuesApp } from '../support/map-values-app.ts';

const header = (r: { headers: readonly { key: string; value: Buffer }[] }, k: string) => r.headers.find((h) => h.key === k)?.value.toString();

/**
 * Inputs `a`, a record of `bigBytes`, `b` through mapValues → to, on the real broker; the output topic
 * has max.message.bytes `outputLimit`. The big record must be dead-lettered once, as an excerpt, and
 * both small ones committed around it, with the worker still live.
 */
async function oversized(prefix: string, bigBytes: number, outputLimit: number): Promise<void> {
  const { bootstrap, input, output, appId, topology, dlq } = mapValuesApp(prefix, (v) => (v ?? '').toUpperCase());
  await createTopics(bootstrap, [
    { name: input, partitions: 1, config: { 'max.message.bytes': String(bigBytes + 100_000) } },
    { name: output, partitions: 1, config: { 'max.message.bytes': String(outputLimit) } },
    { name: dlq, partitions: 1 },
  ]);
  const producer = await connectProducer({ 'bootstrap.servers': bootstrap, 'message.max.bytes': bigBytes + 100_000 });
  for (const v of ['a', 'x'.repeat(bigBytes), 'b']) producer.produce(input, 0, Buffer.from(v), 'k');
  await flush(producer, 30_000);
  await disconnect(producer);

  const worker = new Worker(runtimeTopology(topology), { bootstrap, appId, instanceId: 'only' });
  const health = new Readiness(worker);
  await worker.start();
  try {
    await waitCaughtUp({ bootstrap, groupId: appId, plainTopics: [input], timeoutMs: 40_000 });
    assert.equal(worker.state, 'RUNNING');
    assert.equal(health.liveness().ok, true, '/healthz stays 200');
  } finally {
    await worker.stop();
    health.detach();
  }
  const out = await readTopic(bootstrap, output, { isolation: 'read_committed' });
  assert.deepEqual(out.map((r) => r.value?.toString()), ['A', 'B'], 'the small records around the big one committed, the big one not produced');
  const dead = await readTopic(bootstrap, dlq, { isolation: 'read_committed' });
  assert.equal(dead.length, 1, 'dead-lettered once');
  const [d] = dead;
  assert.ok(d);
  assert.equal(header(d, 'onceflow.error.code'), 'RECORD_TOO_LARGE');
  assert.equal(header(d, 'onceflow.source.topic'), input);
  assert.equal(header(d, 'onceflow.source.partition'), '0');
  assert.equal(header(d, 'onceflow.source.offset'), '1');
  assert.equal(header(d, 'onceflow.error.excerpt'), 'value');
  assert.equal(header(d, 'onceflow.source.value-bytes'), String(bigBytes));
  assert.equal(d.value?.length, DEAD_LETTER_EXCERPT_BYTES, 'a bounded excerpt, not the record');
  assert.equal(worker.stats.transactionsAborted, 0, 'nothing was refused on the way');
  // Republished, the excerpt would pass for the record: replay leaves it, and says where the record is.
  const replay = await replayDeadLetters({ bootstrap, dlqTopic: dlq });
  assert.deepEqual({ replayed: replay.replayed.length, excerpts: replay.excerpts.map((e) => e.excerpt?.valueBytes) }, { replayed: 0, excerpts: [bigBytes] });
  assert.equal((await readTopic(bootstrap, input)).length, 3, 'nothing republished to the source topic');
}

// The user's case: the topic takes 5 MB, the producer only 1,000,000 bytes. Before, the 2 MB dead
// letter itself was refused inside produce(), 168 aborts a minute, nothing committed, /healthz 200.
test('a 2 MB record for a topic that takes 5 MB is dead-lettered once as an excerpt, the records around it commit', { timeout: 60_000 }, async () => {
  await oversized('over-producer', 2_000_000, 5_000_000);
});

// The topic's limit is the lower one: learnt at start (DescribeConfigs), not found out by refusals.
test('a 200 KB record for a topic that takes 100 KB is dead-lettered once, the partition goes on', { timeout: 60_000 }, async () => {
  await oversized('over-topic', 200_000, 100_000);
});
