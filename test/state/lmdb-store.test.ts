import { test } from 'node:test';
import assert from 'node:assert/strict';
import { existsSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after } from 'node:test';
import { MAX_KEY_BYTES, PersistentTaskState, readCheckpoint } from '../../src/state/lmdb-store.ts';
import { TransactionalStore } from '../../src/state/transactional.ts';

const b = (s: string) => Buffer.from(s);
const root = mkdtempSync(join(tmpdir(), 'onceflow-lmdb-test-'));
after(() => rmSync(root, { recursive: true, force: true }));
let n = 0;
const freshDir = () => join(root, `task-${n++}`);
const req = (name: string) => ({ name, kind: 'key-value' as const, subtopology: 0, partition: 0 });
const text = (v: Buffer | undefined) => v?.toString();

test('put, get, delete, entries and size, the empty key included, across the write buffer', async () => {
  const state = new PersistentTaskState(freshDir());
  const store = state.storeFactory(req('s'));
  store.put(b(''), b('empty'));
  for (let i = 0; i < 25_000; i++) store.put(b(`k${i}`), b(String(i)));
  store.delete(b('k7'));
  store.put(b('k8'), b('eight'));
  assert.equal(text(store.get(b(''))), 'empty');
  assert.equal(store.get(b('k7')), undefined);
  assert.equal(text(store.get(b('k8'))), 'eight');
  assert.equal(text(store.get(b('k24999'))), '24999');
  assert.equal(store.size, 25_000);
  const all = new Map([...store.entries()].map(([k, v]) => [k.toString(), v.toString()]));
  assert.equal(all.size, 25_000);
  assert.equal(all.get(''), 'empty');
  assert.equal(all.get('k8'), 'eight');
  assert.equal(all.has('k7'), false);
  await state.close();
});

test('a key above the LMDB limit fails with STATE_KEY_TOO_LARGE', async () => {
  const state = new PersistentTaskState(freshDir());
  const store = state.storeFactory(req('s'));
  store.put(Buffer.alloc(MAX_KEY_BYTES, 1), b('ok'));
  assert.throws(() => store.put(Buffer.alloc(MAX_KEY_BYTES + 1, 1), b('x')), { code: 'STATE_KEY_TOO_LARGE' });
  assert.equal(store.size, 1);
  await state.close();
});

test('a clean close checkpoints: the next open keeps the content and resumes from the checkpoint', async () => {
  const dir = freshDir();
  const first = new PersistentTaskState(dir);
  const counts = first.storeFactory(req('counts'));
  const other = first.storeFactory(req('other'));
  assert.equal(first.restoreFrom('counts', 'cl', 0, 0, 10), 0);
  const tx = new TransactionalStore('counts', 'cl', 0, counts);
  tx.put(b('a'), b('1'), 0);
  tx.put(b('b'), b('2'), 0);
  tx.commit();
  tx.put(b('a'), b('uncommitted'), 0);
  tx.rollback();
  other.put(b('x'), b('y'));
  first.startProcessing();
  await first.close([{ topic: 'cl', partition: 0, offset: 42 }, { topic: 'cl-other', partition: 0, offset: 7 }]);
  assert.deepEqual([...(readCheckpoint(dir) ?? [])], [['cl\u00000', 42], ['cl-other\u00000', 7]]);

  const second = new PersistentTaskState(dir);
  const again = second.storeFactory(req('counts'));
  second.storeFactory(req('other'));
  assert.equal(second.restoreFrom('counts', 'cl', 0, 0, 50), 42);
  assert.deepEqual([text(again.get(b('a'))), text(again.get(b('b')))], ['1', '2']);
  // The checkpoint stays while processing: it is a lower bound of what the store holds, which only grows by committed writes.
  second.startProcessing();
  assert.deepEqual([...(readCheckpoint(dir) ?? [])], [['cl\u00000', 42], ['cl-other\u00000', 7]]);
  await second.close();
});

test('a running checkpoint survives a crash: the next open keeps the content and resumes from it', async () => {
  const dir = freshDir();
  const first = new PersistentTaskState(dir);
  const counts = first.storeFactory(req('counts'));
  assert.equal(first.restoreFrom('counts', 'cl', 0, 0, 10), 0);
  first.startProcessing();
  counts.put(b('a'), b('1'));
  await first.checkpoint([{ topic: 'cl', partition: 0, offset: 60 }]);
  counts.put(b('b'), b('2'));
  // Closed without a checkpoint, as a SIGKILL leaves it: what was written after the running checkpoint may be there or not.
  await first.close();

  const second = new PersistentTaskState(dir);
  const again = second.storeFactory(req('counts'));
  assert.equal(second.restoreFrom('counts', 'cl', 0, 0, 90), 60);
  assert.equal(text(again.get(b('a'))), '1');
  await second.close();
});

test('without a checkpoint (the first run, or a store never synced under one) the directory is wiped and restore starts at the beginning', async () => {
  const dir = freshDir();
  const running = new PersistentTaskState(dir);
  running.storeFactory(req('counts')).put(b('a'), b('2'));
  running.startProcessing();
  await running.close();

  const next = new PersistentTaskState(dir);
  const store = next.storeFactory(req('counts'));
  assert.equal(store.get(b('a')), undefined);
  assert.equal(store.size, 0);
  assert.equal(next.restoreFrom('counts', 'cl', 0, 3, 9), 3);
  await next.close();
});

test('a checkpoint outside the changelog partition empties the store and restores from the start', async () => {
  const dir = freshDir();
  const first = new PersistentTaskState(dir);
  first.storeFactory(req('counts')).put(b('a'), b('1'));
  await first.close([{ topic: 'cl', partition: 0, offset: 100 }]);
  const next = new PersistentTaskState(dir);
  const store = next.storeFactory(req('counts'));
  assert.equal(text(store.get(b('a'))), '1');
  // The topic was recreated: its end (20) is before the checkpoint.
  assert.equal(next.restoreFrom('counts', 'cl', 0, 0, 20), 0);
  assert.equal(store.get(b('a')), undefined);
  await next.close();
});

test('a stateless task leaves nothing on disk', async () => {
  const dir = freshDir();
  const state = new PersistentTaskState(dir);
  state.startProcessing();
  await state.close([]);
  assert.equal(existsSync(dir), false);
});
