import assert from 'node:assert/strict';
import { test } from 'node:test';
import type { GroupProtocolAccess } from '../../../src/runtime/base/client-supplier.ts';
import type { WorkerEvent } from '../../../src/runtime/base/worker-events.ts';
import { applyGroupSessionTimeout, chooseGroupProtocol, groupProtocolOptions } from '../../../src/runtime/worker/group-protocol.ts';

/** A broker that serves the consumer protocol or not, and refuses group configs below `minSessionMs` or with a heartbeat below `minHeartbeatMs`. */
function broker(serves: boolean, minSessionMs = 1_000, minHeartbeatMs = 100): GroupProtocolAccess & { readonly set: Record<string, string>[] } {
  const set: Record<string, string>[] = [];
  return {
    set,
    servesConsumerProtocol: async () => serves,
    setGroupConfigs: async (_group, settings) => {
      if (Number(settings['consumer.session.timeout.ms']) < minSessionMs) throw new Error(`consumer.session.timeout.ms must be at least ${minSessionMs}`);
      if (settings['consumer.heartbeat.interval.ms'] !== undefined && Number(settings['consumer.heartbeat.interval.ms']) < minHeartbeatMs) throw new Error('heartbeat too low');
      set.push({ ...settings });
    },
  };
}

test('auto: a joining topology takes the consumer protocol with the range assignor where the broker serves it, classic range where not', async () => {
  assert.deepEqual(await chooseGroupProtocol({ groupProtocol: 'auto' }, true, broker(true)), { protocol: 'consumer', assignor: 'range', reason: 'groupProtocol auto: the topology joins and the broker serves the consumer protocol' });
  const older = await chooseGroupProtocol({ groupProtocol: 'auto' }, true, broker(false));
  assert.deepEqual([older.protocol, older.assignor], ['classic', 'range']);
  const unknown = await chooseGroupProtocol({ groupProtocol: 'auto' }, true, 'security.protocol ssl: plaintext only');
  assert.deepEqual([unknown.protocol, unknown.assignor], ['classic', 'range']);
  assert.match(unknown.reason, /plaintext only/);
  const failing = await chooseGroupProtocol({ groupProtocol: 'auto' }, true, { ...broker(true), servesConsumerProtocol: () => Promise.reject(new Error('no broker answered')) });
  assert.deepEqual([failing.protocol, failing.reason.includes('no broker answered')], ['classic', true]);
});

test('auto keeps a topology without joins on classic cooperative-sticky; classic and consumer are taken as said', async () => {
  const plain = await chooseGroupProtocol({ groupProtocol: 'auto' }, false, broker(true));
  assert.deepEqual([plain.protocol, plain.assignor], ['classic', 'cooperative-sticky']);
  const classic = await chooseGroupProtocol({ groupProtocol: 'classic' }, true, broker(true));
  assert.deepEqual([classic.protocol, classic.assignor], ['classic', 'range']);
  const consumer = await chooseGroupProtocol({ groupProtocol: 'consumer' }, false, broker(false));
  assert.deepEqual([consumer.protocol, consumer.assignor], ['consumer', 'uniform']);
});

test('the consumer protocol leaves session and heartbeat to the broker; classic sets them on the client', () => {
  assert.deepEqual(groupProtocolOptions({ protocol: 'consumer', assignor: 'range' }, 10_000), { 'group.protocol': 'consumer', 'group.remote.assignor': 'range' });
  assert.deepEqual(groupProtocolOptions({ protocol: 'classic', assignor: 'range' }, 10_000), { 'partition.assignment.strategy': 'range', 'session.timeout.ms': 10_000, 'heartbeat.interval.ms': 2_000 });
});

test("the group's session timeout is set with a fifth of it as heartbeat; without the heartbeat where the broker's minimum heartbeat is higher", async () => {
  const events: WorkerEvent[] = [];
  const lenient = broker(true);
  await applyGroupSessionTimeout({ appId: 'app', sessionTimeoutMs: 6_000 }, lenient, (e) => events.push(e));
  assert.deepEqual(lenient.set, [{ 'consumer.session.timeout.ms': '6000', 'consumer.heartbeat.interval.ms': '1200' }]);
  const strictHeartbeat = broker(true, 1_000, 5_000);
  await applyGroupSessionTimeout({ appId: 'app', sessionTimeoutMs: 6_000 }, strictHeartbeat, (e) => events.push(e));
  assert.deepEqual(strictHeartbeat.set, [{ 'consumer.session.timeout.ms': '6000' }]);
  assert.deepEqual(events, [
    { type: 'group-session-timeout', requestedMs: 6_000, applied: true },
    { type: 'group-session-timeout', requestedMs: 6_000, applied: true },
  ]);
});

test("a broker whose minimum session timeout is above sessionTimeoutMs (45 s by default) keeps its own: a warning event says so", async () => {
  const events: WorkerEvent[] = [];
  const strict = broker(true, 45_000);
  await applyGroupSessionTimeout({ appId: 'app', sessionTimeoutMs: 10_000 }, strict, (e) => events.push(e));
  assert.deepEqual(strict.set, []);
  assert.equal(events.length, 1);
  const [event] = events;
  assert.ok(event?.type === 'group-session-timeout' && !event.applied && /at least 45000/.test(event.reason ?? ''), JSON.stringify(event));
});
