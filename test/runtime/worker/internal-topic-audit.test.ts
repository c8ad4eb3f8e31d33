import assert from 'node:assert/strict';
import { test } from 'node:test';
import { internalTopicConfig } from '../../../src/graph/internal-topic-configs.ts';
import type { TopicConfigAccess } from '../../../src/runtime/base/client-supplier.ts';
import { auditInternalTopics, InternalTopicConfigError, unsafeSettings } from '../../../src/runtime/worker/internal-topic-audit.ts';
import type { WorkerEvent } from '../../../src/runtime/base/worker-events.ts';
import type { RuntimeTopic } from '../../../src/runtime/task/worker-topology.ts';

const topic = (name: string, kind: 'repartition' | 'changelog' | 'dead-letter'): RuntimeTopic => ({ name, kind, internal: true, cleanupPolicy: kind === 'changelog' ? 'compact' : 'delete', config: internalTopicConfig(kind) });
const described = (entries: Record<string, Record<string, string>>) => new Map(Object.entries(entries).map(([t, c]) => [t, new Map(Object.entries(c))]));

test('a repartition topic with a time or size limit, a changelog that deletes, a compacted or CreateTime dead-letter topic are unsafe; segment sizes and the order of cleanup.policy are not', () => {
  const topics = [topic('rp', 'repartition'), topic('cl', 'changelog'), topic('cl2', 'changelog'), topic('dlq', 'dead-letter')];
  const corrections = unsafeSettings(
    topics,
    described({
      rp: { 'cleanup.policy': 'delete', 'retention.ms': '604800000', 'retention.bytes': '1073741824', 'segment.bytes': '1073741824' },
      cl: { 'cleanup.policy': 'compact,delete' },
      cl2: { 'cleanup.policy': 'compact' },
      dlq: { 'cleanup.policy': 'delete,compact', 'message.timestamp.type': 'CreateTime' },
    }),
  );
  assert.deepEqual(corrections, [
    { topic: 'rp', setting: 'retention.ms', from: '604800000', to: '-1' },
    { topic: 'rp', setting: 'retention.bytes', from: '1073741824', to: '-1' },
    { topic: 'cl', setting: 'cleanup.policy', from: 'compact,delete', to: 'compact' },
    { topic: 'dlq', setting: 'cleanup.policy', from: 'delete,compact', to: 'delete' },
    { topic: 'dlq', setting: 'message.timestamp.type', from: 'CreateTime', to: 'LogAppendTime' },
  ]);
});

test('a correction the broker refuses stops the start with INTERNAL_TOPIC_CONFIG_UNSAFE naming the topic, the setting and the command that fixes it', async () => {
  const access: TopicConfigAccess = {
    describe: async () => described({ rp: { 'cleanup.policy': 'delete', 'retention.ms': '604800000', 'retention.bytes': '-1' } }),
    set: async () => {
      throw new Error('Topic authorization failed.');
    },
  };
  const events: WorkerEvent[] = [];
  await assert.rejects(auditInternalTopics([topic('rp', 'repartition')], access, (e) => events.push(e)), (e: unknown) => {
    assert.ok(e instanceof InternalTopicConfigError);
    assert.equal(e.code, 'INTERNAL_TOPIC_CONFIG_UNSAFE');
    assert.equal(e.topic, 'rp');
    assert.equal(e.setting, 'retention.ms');
    assert.match(e.message, /retention\.ms=604800000.*Topic authorization failed.*kafka-configs\.sh --alter --entity-type topics --entity-name rp --add-config retention\.ms=-1/);
    return true;
  });
  assert.deepEqual(events, []);
});

test('configs that cannot be read stop the start too; a listener that cannot be spoken to is a warning naming the topics', async () => {
  const unreadable: TopicConfigAccess = {
    describe: async () => {
      throw new Error('no broker answered');
    },
    set: async () => undefined,
  };
  await assert.rejects(auditInternalTopics([topic('cl', 'changelog')], unreadable, () => undefined), (e: unknown) => e instanceof InternalTopicConfigError && e.topic === 'cl' && /could not be read: no broker answered/.test(e.message));
  const events: WorkerEvent[] = [];
  await auditInternalTopics([topic('cl', 'changelog')], 'security.protocol SASL_SSL: plaintext listeners only', (e) => events.push(e));
  assert.deepEqual(events, [{ type: 'topic-configs-unverified', topics: ['cl'], reason: 'security.protocol SASL_SSL: plaintext listeners only' }]);
});
