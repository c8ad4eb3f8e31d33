import assert from 'node:assert/strict';
import { test } from 'node:test';
import type { ClientSupplier, RecordDeleter } from '../../../src/runtime/base/client-supplier.ts';
import { parseWorkerConfig, type ResolvedWorkerConfig } from '../../../src/runtime/base/config.ts';
import { partitionKey } from '../../../src/runtime/base/partition-progress.ts';
import { RepartitionPurge } from '../../../src/runtime/transaction/repartition-purge.ts';
import type { WorkerEvent } from '../../../src/runtime/base/worker-events.ts';

type Deleted = { topic: string; partition: number; offset: number }[];

/** A purge over topic `rp` (repartition) and `in` (a source), owning what `owned` holds, with a clock the test moves. */
function purgeWith(deleter: Partial<RecordDeleter> & Pick<RecordDeleter, 'deleteBelow'>, owned = new Set([partitionKey('rp', 0), partitionKey('rp', 1), partitionKey('in', 0)])) {
  const clock = { now: 1_000_000 };
  const events: WorkerEvent[] = [];
  const config = { ...parseWorkerConfig({ bootstrap: 'b:1', appId: 'app', repartitionPurgeIntervalMs: 30_000 }), instanceId: 'i' } satisfies ResolvedWorkerConfig;
  const clients = { recordDeleter: () => ({ close: async () => undefined, ...deleter }) } as unknown as ClientSupplier;
  const purge = new RepartitionPurge({ config, clients, emit: (e) => events.push(e) }, new Set(['rp']), (key) => owned.has(key), () => clock.now);
  return { purge, clock, events };
}

const settle = () => new Promise((r) => setImmediate(r));

test('an interval after the start, owned repartition partitions are cut below the offset just committed; sources, partitions not owned and partitions with nothing committed are left alone', async () => {
  const calls: Deleted[] = [];
  const { purge, clock } = purgeWith({ deleteBelow: async (p) => void calls.push([...p]) });
  const committed = new Map<string, number | undefined>([
    [partitionKey('rp', 0), 120],
    [partitionKey('rp', 1), undefined],
    [partitionKey('rp', 2), 999], // not owned
    [partitionKey('in', 0), 50],
  ]);
  purge.afterCommit(committed);
  assert.equal(calls.length, 0, 'not within the first interval');
  clock.now += 30_000;
  purge.afterCommit(committed);
  await settle();
  assert.deepEqual(calls, [[{ topic: 'rp', partition: 0, offset: 120 }]]);
});

test('a purge comes at most once an interval, only for partitions that moved past what was purged, and never while one is in flight', async () => {
  const calls: Deleted[] = [];
  let release = (): void => undefined;
  const { purge, clock } = purgeWith({ deleteBelow: (p) => new Promise((resolve) => ((release = () => resolve()), calls.push([...p]))) });
  clock.now += 30_000;
  purge.afterCommit(new Map([[partitionKey('rp', 0), 10], [partitionKey('rp', 1), 20]]));
  clock.now += 10_000;
  purge.afterCommit(new Map([[partitionKey('rp', 0), 15], [partitionKey('rp', 1), 20]]));
  assert.equal(calls.length, 1, 'the first is still in flight');
  release();
  await settle();
  purge.afterCommit(new Map([[partitionKey('rp', 0), 15], [partitionKey('rp', 1), 20]]));
  assert.equal(calls.length, 1, 'within the interval of the first');
  clock.now += 20_000;
  purge.afterCommit(new Map([[partitionKey('rp', 0), 15], [partitionKey('rp', 1), 20]]));
  release();
  await settle();
  assert.deepEqual(calls, [[{ topic: 'rp', partition: 0, offset: 10 }, { topic: 'rp', partition: 1, offset: 20 }], [{ topic: 'rp', partition: 0, offset: 15 }]]);
});

test('a failed purge is a warning event, never an exception, and the next one asks for the same records again', async () => {
  const calls: Deleted[] = [];
  let fail = true;
  const { purge, clock, events } = purgeWith({
    deleteBelow: async (p) => {
      calls.push([...p]);
      if (fail) throw new Error('broker away');
    },
  });
  clock.now += 30_000;
  purge.afterCommit(new Map([[partitionKey('rp', 0), 10]]));
  await settle();
  assert.deepEqual(events, [{ type: 'repartition-purge-failed', reason: 'broker away' }]);
  fail = false;
  clock.now += 30_000;
  purge.afterCommit(new Map([[partitionKey('rp', 0), 10]]));
  await settle();
  assert.deepEqual(calls, [[{ topic: 'rp', partition: 0, offset: 10 }], [{ topic: 'rp', partition: 0, offset: 10 }]]);
  assert.deepEqual(events.at(-1), { type: 'repartition-purged', partitions: 1 });
  await purge.close();
});
