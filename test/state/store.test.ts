import { test } from 'node:test';
import assert from 'node:assert/strict';
import { InMemoryKeyValueStore } from '../../src/state/store.ts';
import { TransactionalStore } from '../../src/state/transactional.ts';
import { DeadlineHeap } from '../../src/state/heap.ts';
import type { OutgoingRecord } from '../../src/core/records.ts';

const b = (s: string) => Buffer.from(s);

function setup() {
  const emitted: OutgoingRecord[] = [];
  const committed = new InMemoryKeyValueStore();
  const store = new TransactionalStore('s', 'app-s-changelog', 2, committed);
  const flush = () => store.flushChangelog((r) => void emitted.push(r));
  return { emitted, committed, store, flush };
}

const changelog = (rs: readonly OutgoingRecord[]) => rs.map((r) => [r.topic, r.partition, r.key?.toString(), r.value?.toString() ?? null, r.timestamp]);

test('writes are visible at once and committed only on commit; the changelog gets the last write per key, at the flush', () => {
  const { emitted, committed, store, flush } = setup();
  store.put(b('k'), b('1'), 10);
  assert.equal(store.get(b('k'))?.toString(), '1');
  assert.equal(committed.get(b('k')), undefined);
  store.put(b('j'), b('x'), 11);
  store.delete(b('k'), 12);
  assert.equal(store.get(b('k')), undefined);
  assert.deepEqual(emitted, []);
  assert.equal(flush(), 2);
  assert.deepEqual(changelog(emitted), [
    ['app-s-changelog', 2, 'k', null, 12],
    ['app-s-changelog', 2, 'j', 'x', 11],
  ]);
  // a second flush emits only what was written since the first
  emitted.length = 0;
  store.put(b('k'), b('2'), 13);
  flush();
  assert.deepEqual(changelog(emitted), [['app-s-changelog', 2, 'k', '2', 13]]);
  store.commit();
  assert.equal(committed.get(b('k'))?.toString(), '2');
  assert.equal(committed.get(b('j'))?.toString(), 'x');
  emitted.length = 0;
  assert.equal(flush(), 0);
});

test('a record undone by endRecord(false) and a rolled-back transaction leave nothing in the changelog', () => {
  const { emitted, store, flush } = setup();
  store.put(b('a'), b('1'), 1);
  store.endRecord(true);
  store.put(b('a'), b('2'), 2);
  store.put(b('b'), b('x'), 2);
  store.endRecord(false);
  flush();
  assert.deepEqual(changelog(emitted), [['app-s-changelog', 2, 'a', '1', 1]]);
  emitted.length = 0;
  store.put(b('c'), b('y'), 3);
  store.rollback();
  assert.equal(flush(), 0);
});

test('rollback drops the whole transaction; endRecord(false) drops only the current record', () => {
  const { store } = setup();
  store.put(b('a'), b('1'), 0);
  store.commit();
  store.put(b('a'), b('2'), 0);
  store.endRecord(true);
  store.put(b('a'), b('3'), 0);
  store.put(b('b'), b('x'), 0);
  store.delete(b('a'), 0);
  store.endRecord(false);
  assert.equal(store.get(b('a'))?.toString(), '2');
  assert.equal(store.get(b('b')), undefined);
  store.rollback();
  assert.equal(store.get(b('a'))?.toString(), '1');
  assert.deepEqual([...store.entries()].map(([k, v]) => [k.toString(), v.toString()]), [['a', '1']]);
});

test('keys are compared as bytes', () => {
  const { store } = setup();
  store.put(Buffer.from([0xff, 0x00]), b('x'), 0);
  assert.equal(store.get(Buffer.from([0xff, 0x00]))?.toString(), 'x');
  assert.equal(store.get(Buffer.from([0xfe, 0x00])), undefined);
});

test('the deadline heap pops in deadline order and only what is due', () => {
  const h = new DeadlineHeap<string>();
  for (const [at, v] of [[5, 'e'], [1, 'a'], [3, 'c'], [2, 'b'], [4, 'd']] as const) h.push(at, v);
  assert.equal(h.popDue(0), undefined);
  const out: string[] = [];
  for (let e = h.popDue(3); e; e = h.popDue(3)) out.push(e.item);
  assert.deepEqual(out, ['a', 'b', 'c']);
  assert.equal(h.size, 2);
});
