import { test } from 'node:test';
import assert from 'node:assert/strict';
import { jsonSerde, stringSerde } from '../../src/serdes/index.ts';
import type { Serde } from '../../src/serdes/serde.ts';
import { deletableSerde, tableChangeSerde, TableChangeInvalidError } from '../../src/state/table-change.ts';

const ctx = { topic: 'app-store-repartition', role: 'value' as const };

test('a table change round-trips with a removed value, an added value or both, empty values included', () => {
  const serde = tableChangeSerde(jsonSerde<unknown>() as Serde<unknown>);
  for (const change of [{ removed: { a: 1 } }, { added: [1, 2] }, { removed: 'x', added: 'yz' }, { removed: 0, added: 0 }]) {
    assert.deepEqual(serde.deserialize(serde.serialize(change, ctx), ctx), change);
  }
  const strings = tableChangeSerde(stringSerde as Serde<unknown>);
  assert.deepEqual(strings.deserialize(strings.serialize({ removed: '', added: 'b' }, ctx), ctx), { removed: '', added: 'b' });
});

test('bytes that are not a table change, or a change with neither side, fail with TABLE_CHANGE_INVALID naming the topic', () => {
  const serde = tableChangeSerde(stringSerde as Serde<unknown>);
  for (const bytes of [null, Buffer.alloc(0), Buffer.of(9, 1), Buffer.of(3, 0, 0, 0, 9, 65)]) {
    assert.throws(
      () => serde.deserialize(bytes, ctx),
      (e: unknown) => e instanceof TableChangeInvalidError && e.code === 'TABLE_CHANGE_INVALID' && e.message.includes('app-store-repartition'),
    );
  }
  assert.throws(() => serde.serialize({}, ctx), TableChangeInvalidError);
});

test('the inner serde prepares and resolves through the envelope, once per value the record carries', async () => {
  const resolved: string[] = [];
  const inner: Serde<unknown> = {
    ...(stringSerde as Serde<unknown>),
    prepare: async () => void resolved.push('prepare'),
    resolve: (data) => (data === null ? null : Promise.resolve(void resolved.push(data.toString()))),
  };
  const serde = tableChangeSerde(inner);
  await serde.prepare!(ctx, {});
  await serde.resolve!(serde.serialize({ removed: 'old', added: 'new' }, ctx), ctx);
  assert.deepEqual(resolved, ['prepare', 'old', 'new']);
});

test('a deletable state serde turns null into a deleted row, whatever the inner serde does with null', () => {
  const serde = deletableSerde(jsonSerde<number>());
  assert.equal(serde.serialize(null, ctx), null);
  assert.equal(serde.deserialize(null, ctx), null);
  assert.equal(serde.deserialize(serde.serialize(4, ctx), ctx), 4);
});
