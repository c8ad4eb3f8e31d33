import { test } from 'node:test';
import assert from 'node:assert/strict';
import { bytesSerde, stringSerde } from '../../src/serdes/index.ts';

const ctx = { topic: 'orders', role: 'value' } as const;

test('stringSerde round-trips UTF-8 and keeps null as a tombstone', () => {
  const s = 'grüße 🚀';
  const bytes = stringSerde.serialize(s, ctx);
  assert.deepEqual(bytes, Buffer.from(s, 'utf8'));
  assert.equal(stringSerde.deserialize(bytes, ctx), s);
  assert.equal(stringSerde.serialize(null, ctx), null);
  assert.equal(stringSerde.deserialize(null, ctx), null);
});

test('bytesSerde passes bytes through untouched', () => {
  const b = Buffer.from([0, 255, 1, 2]);
  assert.equal(bytesSerde.serialize(b, ctx), b);
  assert.equal(bytesSerde.deserialize(b, ctx), b);
  assert.equal(bytesSerde.deserialize(null, ctx), null);
});
