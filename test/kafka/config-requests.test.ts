import { setTimeout as sleep } from 'node:timers/promises';
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { AlterConfigsError, GroupConfigsError, incrementalAlterConfigsRequest, setGroupConfigs, setTopicConfigs } from '../../src/kafka/alter-configs.ts';
import { apiVersionsRequest, servesConsumerGroupProtocol } from '../../src/kafka/api-versions.ts';
import { DescribeConfigsError, describeConfigsRequest, describeTopicConfigs } from '../../src/kafka/topic-configs.ts';
import { frame, Reader } from '../../src/kafka/wire.ts';
import { createTopics, testCluster, uniqueName } from '../support/cluster.ts';

// The bytes are spelled out from the Kafka protocol's message definitions (DescribeConfigsRequest v1,
// IncrementalAlterConfigsRequest v0), not built with the code under test.
const int8 = (v: number) => Buffer.from([v & 0xff]);
const int16 = (v: number) => {
  const b = Buffer.alloc(2);
  b.writeInt16BE(v);
  return b;
};
const int32 = (v: number) => {
  const b = Buffer.alloc(4);
  b.writeInt32BE(v);
  return b;
};
const str = (s: string | null) => (s === null ? int16(-1) : Buffer.concat([int16(Buffer.byteLength(s)), Buffer.from(s)]));
const sized = (...parts: Buffer[]) => {
  const body = Buffer.concat(parts);
  return Buffer.concat([int32(body.length), body]);
};

test('DescribeConfigs v1 asks for the named configs of each topic, synonyms off', () => {
  const expected = sized(int16(32), int16(1), int32(1), str('c'), int32(1), int8(2), str('t'), int32(2), str('retention.ms'), str('cleanup.policy'), int8(0));
  assert.deepEqual(frame(describeConfigsRequest(['t'], ['retention.ms', 'cleanup.policy']), 'c'), expected);
});

test('a DescribeConfigs v1 response is read as topic -> config -> value, synonyms skipped', () => {
  const config = (name: string, value: string | null, synonyms: number) =>
    Buffer.concat([str(name), str(value), int8(0), int8(5), int8(0), int32(synonyms), ...Array.from({ length: synonyms }, () => Buffer.concat([str('log.retention.ms'), str('1'), int8(4)]))]);
  const response = Buffer.concat([
    int32(7), // correlation id
    int32(0), // throttle
    int32(2),
    int16(0), str(null), int8(2), str('a'), int32(2), config('retention.ms', '604800000', 1), config('cleanup.policy', 'delete', 0),
    int16(0), str(null), int8(2), str('b'), int32(1), config('retention.ms', '-1', 0),
  ]);
  const read = describeConfigsRequest(['a', 'b'], ['retention.ms', 'cleanup.policy']).parse(new Reader(response).skipCorrelationId());
  assert.deepEqual([...read].map(([t, m]) => [t, Object.fromEntries(m)]), [
    ['a', { 'retention.ms': '604800000', 'cleanup.policy': 'delete' }],
    ['b', { 'retention.ms': '-1' }],
  ]);
});

test('a DescribeConfigs error for a topic is a DescribeConfigsError naming it', () => {
  const response = Buffer.concat([int32(1), int32(0), int32(1), int16(3), str('This server does not host this topic-partition.'), int8(2), str('gone'), int32(0)]);
  assert.throws(() => describeConfigsRequest(['gone'], ['retention.ms']).parse(new Reader(response).skipCorrelationId()), (e: unknown) => e instanceof DescribeConfigsError && /topic gone: error 3/.test(e.message));
});

test('IncrementalAlterConfigs v0 SETs each named config of the topic, not validate-only', () => {
  const expected = sized(int16(44), int16(0), int32(1), str('c'), int32(1), int8(2), str('t'), int32(2), str('retention.ms'), int8(0), str('-1'), str('retention.bytes'), int8(0), str('-1'), int8(0));
  assert.deepEqual(frame(incrementalAlterConfigsRequest('t', { 'retention.ms': '-1', 'retention.bytes': '-1' }), 'c'), expected);
});

test('an IncrementalAlterConfigs v0 response is undefined when applied, the error code and message when refused', () => {
  const response = (code: number, message: string | null) => new Reader(Buffer.concat([int32(1), int32(0), int32(1), int16(code), str(message), int8(2), str('t')])).skipCorrelationId();
  assert.equal(incrementalAlterConfigsRequest('t', { 'retention.ms': '-1' }).parse(response(0, null)), undefined);
  assert.deepEqual(incrementalAlterConfigsRequest('t', { 'retention.ms': '-1' }).parse(response(29, 'Topic authorization failed.')), { errorCode: 29, message: 'Topic authorization failed.' });
});

test('on the test broker: a topic created with a 7-day retention is read, set to -1 and read back; an invalid value is refused with the topic named', async () => {
  const { bootstrap } = testCluster();
  const topic = uniqueName('config-requests');
  await createTopics(bootstrap, [{ name: topic, partitions: 1, config: { 'retention.ms': '604800000' } }]);
  const before = await describeTopicConfigs(bootstrap, [topic], ['retention.ms', 'cleanup.policy']);
  assert.deepEqual(Object.fromEntries(before.get(topic)!), { 'retention.ms': '604800000', 'cleanup.policy': 'delete' });
  await setTopicConfigs(bootstrap, topic, { 'retention.ms': '-1', 'retention.bytes': '-1' });
  // The controller commits the change and each broker applies it from the metadata log a moment later:
  // under load a describe right after the alter can still show the old value, so read until it shows.
  const wanted = { 'retention.ms': '-1', 'retention.bytes': '-1', 'cleanup.policy': 'delete' };
  let after: Record<string, string> = {};
  for (let attempt = 0; attempt < 50; attempt++) {
    after = Object.fromEntries((await describeTopicConfigs(bootstrap, [topic], ['retention.ms', 'retention.bytes', 'cleanup.policy'])).get(topic)!);
    if (after['retention.ms'] === '-1') break;
    await sleep(200);
  }
  assert.deepEqual(after, wanted);
  await assert.rejects(setTopicConfigs(bootstrap, topic, { 'cleanup.policy': 'shred' }), (e: unknown) => e instanceof AlterConfigsError && e.topic === topic && e.errorCode !== 0);
});

test('IncrementalAlterConfigs v0 for a consumer group names resource type 32 (GROUP)', () => {
  const expected = sized(int16(44), int16(0), int32(1), str('c'), int32(1), int8(32), str('g'), int32(1), str('consumer.session.timeout.ms'), int8(0), str('6000'), int8(0));
  assert.deepEqual(frame(incrementalAlterConfigsRequest('g', { 'consumer.session.timeout.ms': '6000' }, 'group'), 'c'), expected);
});

test('on the test broker: a group session timeout within the broker bounds is taken; one below its minimum is refused with the group named', async () => {
  const { bootstrap } = testCluster();
  const group = uniqueName('group-configs');
  await setGroupConfigs(bootstrap, group, { 'consumer.session.timeout.ms': '6000', 'consumer.heartbeat.interval.ms': '1200' });
  await assert.rejects(setGroupConfigs(bootstrap, group, { 'consumer.session.timeout.ms': '10' }), (e: unknown) => e instanceof GroupConfigsError && e.group === group && e.errorCode !== 0);
});

test('ApiVersions v2 has an empty body; its response is read as API key -> highest version', () => {
  assert.deepEqual(frame(apiVersionsRequest(), 'c'), sized(int16(18), int16(2), int32(1), str('c')));
  const response = Buffer.concat([int32(1), int16(0), int32(2), int16(18), int16(0), int16(4), int16(68), int16(0), int16(1), int32(0)]);
  assert.deepEqual([...apiVersionsRequest().parse(new Reader(response).skipCorrelationId())], [[18, 4], [68, 1]]);
});

test('on the test broker (Kafka 4): ConsumerGroupHeartbeat is served, so the consumer protocol is there', async () => {
  assert.equal(await servesConsumerGroupProtocol(testCluster().bootstrap), true);
});
