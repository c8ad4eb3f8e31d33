import assert from 'node:assert/strict';
import { test } from 'node:test';
import { standbyTasks } from '../../../src/runtime/standby/standby-placement.ts';

const stateful = new Map([['orders-by-customer', 1]]);
const owning = (clientId: string, ...partitions: number[]) => ({ clientId, partitions: partitions.flatMap((p) => [{ topic: 'orders', partition: p }, { topic: 'orders-by-customer', partition: p }]) });

test('a replica keeps warm the stateful tasks of the members before it on the ring of client ids, and none of its own or of stateless sub-topologies', () => {
  const members = [owning('app-c', 4, 5), owning('app-a', 0, 1), owning('app-b', 2, 3)];
  assert.deepEqual([...standbyTasks('app-b', members, stateful, 1)].sort(), ['1_0', '1_1']);
  assert.deepEqual([...standbyTasks('app-c', members, stateful, 1)].sort(), ['1_2', '1_3']);
  assert.deepEqual([...standbyTasks('app-a', members, stateful, 1)].sort(), ['1_4', '1_5'], 'the ring wraps around');
  assert.deepEqual([...standbyTasks('app-a', members, stateful, 2)].sort(), ['1_2', '1_3', '1_4', '1_5'], 'two standbys: every other member of three');
  assert.deepEqual([...standbyTasks('app-a', members, stateful, 5)].sort(), ['1_2', '1_3', '1_4', '1_5'], 'more standbys than members: each task at most once, never its owner');
});

test('every task gets exactly `count` standbys among the other members, whoever computes it', () => {
  const members = [owning('w1', 0, 1), owning('w2', 2), owning('w3', 3, 4), owning('w4', 5)];
  for (const count of [1, 2, 3]) {
    const holders = new Map<string, number>();
    for (const m of members) for (const id of standbyTasks(m.clientId, members, stateful, count)) holders.set(id, (holders.get(id) ?? 0) + 1);
    assert.deepEqual([...holders.values()], Array.from({ length: 6 }, () => count), `count ${count}`);
  }
});

test('no standby without another member, without a count, or for a replica the group does not list', () => {
  assert.equal(standbyTasks('w1', [owning('w1', 0, 1)], stateful, 1).size, 0);
  assert.equal(standbyTasks('w1', [owning('w1', 0), owning('w2', 1)], stateful, 0).size, 0);
  assert.equal(standbyTasks('w9', [owning('w1', 0), owning('w2', 1)], stateful, 1).size, 0);
});
