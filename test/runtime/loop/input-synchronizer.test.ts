import assert from 'node:assert/strict';
import { test } from 'node:test';
import type { Message } from '@confluentinc/kafka-javascript';
import { InputSynchronizer, LAG_WAIT_LIMIT_MS, MAX_HELD_PER_PARTITION, type EnforcedProcessing } from '../../../src/runtime/loop/input-synchronizer.ts';
import { partitionKey } from '../../../src/runtime/base/partition-progress.ts';

const TABLE = partitionKey('customers', 0);
const STREAM = partitionKey('orders', 0);
const OTHER = partitionKey('clicks', 0);

function message(topic: string, offset: number, timestamp: number): Message {
  return { topic, partition: 0, offset, timestamp, key: null, value: Buffer.from(`${topic}@${offset}`), size: 0 };
}

/** A task reading customers-0 and orders-0, and a single-input partition beside it. */
function setup(maxTaskIdleMs = 0) {
  const lags = new Map<string, number | undefined>([
    [TABLE, 0],
    [STREAM, 0],
  ]);
  const moves = new Map<string, number>();
  const enforced: EnforcedProcessing[] = [];
  const paused: string[] = [];
  const idle: number[] = [];
  const inputs = [TABLE, STREAM];
  const sync = new InputSynchronizer(
    {
      inputsOf: (key) => (key === OTHER ? undefined : inputs),
      taskOf: () => '0_0',
      lag: (key) => lags.get(key),
      positionMoves: (key) => moves.get(key) ?? 0,
      pause: (key) => paused.push(`pause ${key}`),
      resume: (key) => paused.push(`resume ${key}`),
    },
    maxTaskIdleMs,
    (e) => enforced.push(e),
    (ms) => idle.push(ms),
  );
  const names = (ms: readonly Message[]) => ms.map((m) => m.value!.toString());
  return { sync, lags, moves, enforced, paused, idle, names };
}

test('the records of a task with two inputs go oldest first across them; a single-input partition passes straight through', () => {
  const { sync, names } = setup();
  const batch = [message('orders', 0, 20), message('orders', 1, 40), message('clicks', 0, 5), message('customers', 0, 10), message('customers', 1, 30)];
  assert.deepEqual(names(sync.admit(batch, 0)), ['clicks@0', 'customers@0', 'orders@0', 'customers@1', 'orders@1']);
  assert.equal(sync.holding, false);
});

test('while an input with nothing held is known to have unread records, the task waits; its records go once they come, in timestamp order', () => {
  const { sync, lags, names, enforced, idle } = setup();
  lags.set(TABLE, 500);
  assert.deepEqual(names(sync.admit([message('orders', 0, 100), message('clicks', 0, 1)], 0)), ['clicks@0']);
  assert.equal(sync.holding, true);
  assert.deepEqual(sync.waitingTasks(10), [{ task: '0_0', partition: TABLE, forMs: 10 }]);
  // An empty fetch changes nothing.
  assert.deepEqual(names(sync.admit([], 20)), []);
  // The table's records arrive and it catches up: its older rows go first, then the order, then the newer row.
  lags.set(TABLE, 0);
  assert.deepEqual(names(sync.admit([message('customers', 0, 50), message('customers', 1, 150)], 30)), ['customers@0', 'orders@0', 'customers@1']);
  assert.equal(sync.holding, false);
  assert.deepEqual(idle, [30]);
  assert.deepEqual(enforced, []);
});

test('an input whose end is unknown is waited for at most LAG_WAIT_LIMIT_MS; then the task goes on, said once', () => {
  const { sync, lags, names, enforced } = setup();
  lags.set(TABLE, undefined);
  assert.deepEqual(names(sync.admit([message('orders', 0, 100)], 0)), []);
  assert.deepEqual(names(sync.admit([message('orders', 1, 101)], LAG_WAIT_LIMIT_MS - 1)), []);
  assert.deepEqual(names(sync.admit([], LAG_WAIT_LIMIT_MS)), ['orders@0', 'orders@1']);
  assert.deepEqual(names(sync.admit([message('orders', 2, 102)], LAG_WAIT_LIMIT_MS + 5)), ['orders@2']);
  assert.deepEqual(enforced, [{ task: '0_0', partition: TABLE, waitedMs: LAG_WAIT_LIMIT_MS, reason: 'unknown' }]);
});

test('maxTaskIdleMs > 0 also waits that long for an input that is caught up; -1 never waits', () => {
  const idle = setup(5_000);
  assert.deepEqual(idle.names(idle.sync.admit([message('orders', 0, 100)], 0)), []);
  assert.deepEqual(idle.names(idle.sync.admit([], 4_999)), []);
  assert.deepEqual(idle.names(idle.sync.admit([], 5_000)), ['orders@0']);
  assert.equal(idle.enforced[0]?.reason, 'idle');

  const never = setup(-1);
  never.lags.set(TABLE, 1_000);
  const batch = [message('orders', 0, 100)];
  assert.equal(never.sync.admit(batch, 0), batch);
});

test('held records of a partition whose position was put back are dropped: they are fetched again from there', () => {
  const { sync, lags, moves, names } = setup();
  lags.set(TABLE, 10);
  assert.deepEqual(names(sync.admit([message('orders', 0, 100), message('orders', 1, 101)], 0)), []);
  moves.set(STREAM, 1);
  lags.set(TABLE, 0);
  assert.deepEqual(names(sync.admit([message('orders', 0, 100)], 1)), ['orders@0']);
  assert.equal(sync.holding, false);
});

test('a partition whose held records pile up past MAX_HELD_PER_PARTITION is paused, and resumed once half of them have gone', () => {
  const { sync, lags, paused, names } = setup();
  lags.set(TABLE, 1);
  const orders = Array.from({ length: MAX_HELD_PER_PARTITION + 1 }, (_, i) => message('orders', i, 1_000 + i));
  assert.deepEqual(sync.admit(orders, 0), []);
  assert.deepEqual(paused, [`pause ${STREAM}`]);
  lags.set(TABLE, 0);
  const released = sync.admit([message('customers', 0, 0)], 1);
  assert.equal(released.length, MAX_HELD_PER_PARTITION + 2);
  assert.deepEqual(names(released.slice(0, 2)), ['customers@0', 'orders@0']);
  assert.deepEqual(paused, [`pause ${STREAM}`, `resume ${STREAM}`]);
});
