import assert from 'node:assert/strict';
import { test } from 'node:test';
import { setTimeout as sleep } from 'node:timers/promises';
import { StateCheckpoints } from '../../../src/runtime/task/state-checkpoints.ts';
import type { RuntimeTask } from '../../../src/runtime/task/worker-topology.ts';
import type { ChangelogOffset, PersistentTaskState } from '../../../src/state/lmdb-store.ts';

function fakeTask(topic: string): RuntimeTask {
  return { changelogs: [{ store: 's', topic, partition: 0 }, { store: 't', topic: 'table-source', partition: 0, sourceTopic: true }] } as unknown as RuntimeTask;
}

function fakeState(written: ChangelogOffset[][]): PersistentTaskState {
  return { checkpoint: async (offsets: readonly ChangelogOffset[]) => void written.push([...offsets]) } as unknown as PersistentTaskState;
}

test("changelog ends read after one commit are written only after a later commit; a table's source topic at the group's committed offset read then", async () => {
  let commits = 0;
  let end = 100;
  let committed: number | undefined = 40;
  const checkpoints = new StateCheckpoints(1, async () => end, () => commits, (topic, partition) => (topic === 'table-source' && partition === 0 ? committed : undefined));
  const task = fakeTask('app-s-changelog');
  const written: ChangelogOffset[][] = [];
  const states = new Map([[task, fakeState(written)]]);
  await sleep(5);
  commits = 1;
  await checkpoints.afterCommit(states);
  await sleep(5); // the ends arrive: 100, with one commit done
  end = 150;
  committed = 45;
  assert.deepEqual(written, [], 'nothing is written on the commit the ends were asked after');
  await checkpoints.afterCommit(states); // no commit since the answer: still nothing
  assert.deepEqual(written, []);
  commits = 2;
  await checkpoints.afterCommit(states);
  assert.deepEqual(written, [
    [
      { topic: 'app-s-changelog', partition: 0, offset: 100 },
      { topic: 'table-source', partition: 0, offset: 40 },
    ],
  ]);
});

test('a table source partition with no committed offset yet is left out of the checkpoint (its store is then restored whole)', async () => {
  let commits = 1;
  const checkpoints = new StateCheckpoints(1, async () => 9, () => commits, () => undefined);
  const written: ChangelogOffset[][] = [];
  const states = new Map([[fakeTask('c'), fakeState(written)]]);
  await sleep(5);
  await checkpoints.afterCommit(states);
  await sleep(5);
  commits = 2;
  await checkpoints.afterCommit(states);
  assert.deepEqual(written, [[{ topic: 'c', partition: 0, offset: 9 }]]);
});

test('a task reassigned between the reading and the writing is not checkpointed with the old reading', async () => {
  let commits = 1;
  const checkpoints = new StateCheckpoints(1, async () => 7, () => commits);
  const task = fakeTask('c');
  const before: ChangelogOffset[][] = [];
  const after: ChangelogOffset[][] = [];
  await sleep(5);
  await checkpoints.afterCommit(new Map([[task, fakeState(before)]]));
  await sleep(5);
  commits = 2;
  await checkpoints.afterCommit(new Map([[task, fakeState(after)]]));
  assert.deepEqual([before, after], [[], []]);
});

test('an interval of 0 never checkpoints while running', async () => {
  let asked = 0;
  let commits = 0;
  const checkpoints = new StateCheckpoints(0, async () => ++asked, () => commits);
  const written: ChangelogOffset[][] = [];
  const states = new Map([[fakeTask('c'), fakeState(written)]]);
  for (commits = 1; commits < 5; commits++) {
    await checkpoints.afterCommit(states);
    await sleep(2);
  }
  assert.deepEqual([asked, written.length], [0, 0]);
});
