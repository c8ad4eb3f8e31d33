import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import { setTimeout as sleep } from 'node:timers/promises';
import { Command } from 'commander';
import type { KafkaConsumer } from '@confluentinc/kafka-javascript';
import { formatStatus, groupStatus, registerStatus, StatusError, watchStatus, type GroupStatus } from '../../src/cli/status.ts';
import { withAdmin } from '../../src/kafka/admin.ts';
import { ReadableProbe } from '../../src/kafka/readable-probe.ts';
import { formatCommitMetadata } from '../../src/runtime/transaction/commit-metadata.ts';
import { connectConsumer, connectProducer, consumeBatch, disconnect, flush } from '../../src/kafka/clients.ts';
import { createTopics, testCluster, uniqueName } from '../support/cluster.ts';

const { bootstrap } = testCluster();
const topic = uniqueName('status-in');
const group = uniqueName('status-app');
const clientId = uniqueName('status-client');
let consumer: KafkaConsumer;
const probe = new ReadableProbe(bootstrap);
const COMMITTED_AT = Date.UTC(2026, 11, 3, 6, 30);

before(async () => {
  await createTopics(bootstrap, [{ name: topic, partitions: 2 }]);
  const producer = await connectProducer({ 'bootstrap.servers': bootstrap });
  for (let i = 0; i < 6; i++) producer.produce(topic, 0, Buffer.from(`a${i}`), `k${i}`);
  for (let i = 0; i < 4; i++) producer.produce(topic, 1, Buffer.from(`b${i}`), `k${i}`);
  await flush(producer, 30_000);
  await disconnect(producer);

  consumer = await connectConsumer({ 'bootstrap.servers': bootstrap, 'group.id': group, 'client.id': clientId, 'enable.auto.commit': false, 'auto.offset.reset': 'earliest' });
  consumer.subscribe([topic]);
  // The group only has an assignment once the consumer has polled through the join.
  const deadline = Date.now() + 60_000;
  while (consumer.assignments().length < 2) {
    if (Date.now() > deadline) throw new Error('consumer got no assignment within 60 s');
    await consumeBatch(consumer, 100);
    await sleep(50);
  }
  consumer.commitSync([
    { topic, partition: 0, offset: 2, metadata: formatCommitMetadata({ by: 'orders-a', at: COMMITTED_AT }) },
    { topic, partition: 1, offset: 4 },
  ]);
});

after(async () => {
  await disconnect(consumer);
  await probe.close();
});

test('groupStatus reports the member, its partitions, committed and end offsets and lag', async () => {
  const s = await withAdmin(bootstrap, (admin) => groupStatus(admin, group, probe));
  assert.equal(s.groupId, group);
  assert.equal(s.state, 'Stable');
  assert.equal(s.members.length, 1);
  assert.equal(s.members[0]?.clientId, clientId);
  assert.ok((s.members[0]?.host ?? '').length > 0);
  assert.deepEqual([...(s.members[0]?.partitions ?? [])].sort(), [`${topic}-0`, `${topic}-1`]);
  assert.deepEqual(
    s.partitions.map((p) => ({ topic: p.topic, partition: p.partition, committed: p.committed, end: p.end, lag: p.lag, clientId: p.clientId })),
    [
      { topic, partition: 0, committed: 2, end: 6, lag: 4, clientId },
      { topic, partition: 1, committed: 4, end: 4, lag: 0, clientId },
    ],
  );
  const text = formatStatus(s);
  assert.match(text, new RegExp(`group ${group}  state Stable  members 1  partitions 2  total lag 4`));
  assert.match(text, new RegExp(`^${topic}\\s+0\\s+2\\s+6\\s+4\\s+${clientId}`, 'm'));
  // The last commit comes from the metadata a worker stores with its offsets; a plain commit has none.
  const byPartition = new Map(s.partitions.map((p) => [p.partition, p]));
  assert.equal(byPartition.get(0)?.lastCommitAt, COMMITTED_AT);
  assert.equal(byPartition.get(0)?.committedBy, 'orders-a');
  assert.equal(byPartition.get(1)?.lastCommitAt, undefined);
  assert.equal(s.members[0]?.lastCommitAt, COMMITTED_AT);
  assert.match(text, new RegExp(`^\\S+\\s+${clientId}\\s+\\S+\\s+2\\s+${new Date(COMMITTED_AT).toISOString()}$`, 'm'));
  assert.match(text, new RegExp(`\\s${new Date(COMMITTED_AT).toISOString()}\\s+orders-a$`, 'm'));
});

test('onceflow status prints the table; --json the same data', async () => {
  let out = '';
  const program = new Command('onceflow').exitOverride();
  registerStatus(program, { out: (t) => (out += t) });
  await program.parseAsync(['node', 'onceflow', 'status', '--app-id', group, '--bootstrap', bootstrap]);
  assert.match(out, /TOPIC\s+PARTITION\s+COMMITTED\s+END\s+LAG\s+CLIENT ID\s+HOST/);
  assert.match(out, new RegExp(`^${topic}\\s+1\\s+4\\s+4\\s+0\\s+${clientId}`, 'm'));

  out = '';
  const again = new Command('onceflow').exitOverride();
  registerStatus(again, { out: (t) => (out += t) });
  await again.parseAsync(['node', 'onceflow', 'status', '--app-id', group, '--bootstrap', bootstrap, '--json']);
  const s = JSON.parse(out) as GroupStatus;
  assert.equal(s.partitions.find((p) => p.partition === 0)?.lag, 4);
});

test('watchStatus refreshes until aborted, seeing a new commit', async () => {
  const seen: GroupStatus[] = [];
  const ac = new AbortController();
  await withAdmin(bootstrap, (admin) =>
    watchStatus(admin, group, {
      intervalMs: 100,
      signal: ac.signal,
      probe,
      onUpdate: (s) => {
        seen.push(s);
        if (seen.length === 1) consumer.commitSync([{ topic, partition: 0, offset: 6 }]);
        if (s.partitions.find((p) => p.partition === 0)?.lag === 0) ac.abort();
      },
    }),
  );
  assert.equal(seen[0]?.partitions.find((p) => p.partition === 0)?.lag, 4);
  assert.equal(seen.at(-1)?.partitions.find((p) => p.partition === 0)?.committed, 6);
});

test('an unknown app id is GROUP_NOT_FOUND', async () => {
  const program = new Command('onceflow').exitOverride();
  registerStatus(program, { out: () => undefined });
  await assert.rejects(program.parseAsync(['node', 'onceflow', 'status', '--app-id', uniqueName('nobody'), '--bootstrap', bootstrap]), (e: unknown) => e instanceof StatusError && e.code === 'GROUP_NOT_FOUND');
});
