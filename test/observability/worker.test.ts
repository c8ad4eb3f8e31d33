import assert from 'node:assert/strict';
import { test } from 'node:test';
import { setTimeout as sleep } from 'node:timers/promises';
import { produceInOneTransaction } from '../../src/kafka/produce-records.ts';
import { attachLogging, createLogger } from '../../src/observability/logger.ts';
import { startObservability } from '../../src/observability/health.ts';
import { Worker } from '../../src/runtime/worker/worker.ts';
import type { RuntimeTopic, RuntimeTopology } from '../../src/runtime/task/worker-topology.ts';
import { createTopics, testCluster, uniqueName } from '../support/cluster.ts';

async function until(what: string, pred: () => boolean | Promise<boolean>, timeoutMs = 90_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!(await pred())) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await sleep(100);
  }
}

test('a real worker: metrics count what it processed and dead-lettered, readyz turns ready, logs carry its ids', async () => {
  const { bootstrap } = testCluster();
  const input = uniqueName('obs-in');
  const output = uniqueName('obs-out');
  const dlq = uniqueName('obs-dlq');
  await createTopics(bootstrap, [
    { name: input, partitions: 2 },
    { name: output, partitions: 2 },
    { name: dlq, partitions: 1 },
  ]);
  const topics: RuntimeTopic[] = [
    { name: input, kind: 'source', internal: false, cleanupPolicy: 'delete' },
    { name: output, kind: 'sink', internal: false, cleanupPolicy: 'delete' },
    { name: dlq, kind: 'dead-letter', internal: false, cleanupPolicy: 'delete' },
  ];
  const topology: RuntimeTopology = {
    appId: uniqueName('obs-app'),
    subtopologies: [{ id: 0, sourceTopics: [input] }],
    topics,
    serdeUsages: () => [],
    resolvePartitions: () => ({ topics }),
    totalRetryBudgetMs: () => 0,
    createTask: () => ({
      changelogs: [],
      restore() {},
      commit() {},
      rollback() {},
      process(r, c) {
        const text = r.value?.toString() ?? '';
        if (text.startsWith('poison')) {
          c.send({ topic: dlq, key: r.key, value: r.value, headers: [{ key: 'onceflow.error.stage', value: Buffer.from('parse') }, { key: 'onceflow.error.code', value: Buffer.from('DESERIALIZE_FAILED') }] });
        } else {
          c.send({ topic: output, key: r.key, value: Buffer.from(text.toUpperCase()) });
        }
      },
    }),
  };

  // In one transaction, as `onceflow produce` writes: each input partition ends in a commit marker no consumer returns.
  const inputs = Array.from({ length: 40 }, (_, i) => ({ partition: i % 2, key: Buffer.from(`k${i}`), value: Buffer.from(i % 10 === 0 ? `poison-${i}` : `v${i}`) }));
  await produceInOneTransaction(bootstrap, input, inputs);

  const password = 'never-log-me-7781';
  // librdkafka ignores SASL settings under PLAINTEXT but they are in the config everything observes.
  const worker = new Worker(topology, { bootstrap, appId: topology.appId, instanceId: 'obs-1', kafka: { 'sasl.username': 'svc', 'sasl.password': password } });
  const lines: string[] = [];
  const logging = attachLogging(worker, createLogger({ level: 'debug', destination: { write: (l: string) => lines.push(l) } }));
  const obs = await startObservability(worker, { port: 0, host: '127.0.0.1', dlqThreshold: { count: 1_000, intervalMs: 60_000 } });
  const get = async (path: string) => {
    const res = await fetch(`http://127.0.0.1:${obs.port}${path}`);
    return { status: res.status, body: await res.text() };
  };
  try {
    assert.equal((await get('/readyz')).status, 503);
    await worker.start();
    await until('all 40 records committed', () => worker.stats.recordsConsumed === 40 && worker.stats.lastCommitAt > 0 && worker.stats.transactionsCommitted > 0);
    await until('readyz 200', async () => (await get('/readyz')).status === 200);
    const ready = JSON.parse((await get('/readyz')).body) as { partitions: number };
    assert.equal(ready.partitions, 2);

    const metrics = (await get('/metrics')).body;
    const app = topology.appId;
    assert.match(metrics, new RegExp(`^onceflow_records_consumed_total\\{app="${app}"\\} 40$`, 'm'));
    assert.match(metrics, new RegExp(`^onceflow_records_produced_total\\{app="${app}"\\} 40$`, 'm'));
    assert.match(metrics, new RegExp(`^onceflow_dlq_records_total\\{stage="parse",code="DESERIALIZE_FAILED",app="${app}"\\} 4$`, 'm'));
    assert.match(metrics, new RegExp(`^onceflow_tasks_assigned\\{app="${app}"\\} 2$`, 'm'));
    assert.match(metrics, /^onceflow_commit_latency_seconds_count\{app="[^"]+"\} [1-9]\d*$/m);
    assert.match(metrics, /^onceflow_process_resident_memory_bytes/m);
    assert.match(metrics, new RegExp(`^onceflow_topic_records_consumed\\{topic="${input}",app="${app}"\\} 40$`, 'm'));
    assert.match(metrics, new RegExp(`^onceflow_topic_records_produced\\{topic="${output}",app="${app}"\\} 36$`, 'm'));
    assert.match(metrics, new RegExp(`^onceflow_topic_records_produced\\{topic="${dlq}",app="${app}"\\} 4$`, 'm'));
    // Each partition holds 20 records, all committed, and the commit marker after them, which is not lag
    // (as `onceflow status` and the console count it): nothing left to read.
    for (const p of [0, 1]) assert.match(metrics, new RegExp(`^onceflow_consumer_lag\\{topic="${input}",partition="${p}",app="${app}"\\} 0$`, 'm'));
  } finally {
    await worker.stop();
    logging.detach();
    await obs.close();
  }
  const recs = lines.map((l) => JSON.parse(l) as { event?: string; transactionalId?: string; instance?: string });
  assert.ok(recs.some((r) => r.event === 'started'));
  assert.ok(recs.some((r) => r.event === 'assigned'));
  assert.ok(recs.some((r) => r.event === 'stopped'));
  assert.ok(recs.filter((r) => r.event).every((r) => r.transactionalId === `${topology.appId}-obs-1` && r.instance === 'obs-1'));
  assert.ok(!lines.join('').includes(password));
});
