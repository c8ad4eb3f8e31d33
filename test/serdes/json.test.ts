import { test } from 'node:test';
import assert from 'node:assert/strict';
import {
  JsonInvalidError,
  NullValueError,
  SerdeError,
  ValueInvalidError,
  ValueRejectedError,
  jsonSerde,
} from '../../src/serdes/index.ts';

const ctx = { topic: 'orders', role: 'value' } as const;
interface Order {
  orderId: string;
  amount: number;
  tags: string[];
}
const isOrder = (v: unknown): v is Order =>
  typeof v === 'object' && v !== null && typeof (v as Order).orderId === 'string' && typeof (v as Order).amount === 'number';

test('jsonSerde round-trips a value', () => {
  const serde = jsonSerde<Order>();
  const order: Order = { orderId: 'o-1', amount: 12.5, tags: ['a', 'ü'] };
  const bytes = serde.serialize(order, ctx);
  assert.ok(bytes);
  assert.equal(bytes.toString('utf8'), JSON.stringify(order));
  assert.deepEqual(serde.deserialize(bytes, ctx), order);
});

test('invalid JSON is JSON_INVALID naming topic and role', () => {
  const serde = jsonSerde<Order>();
  assert.throws(
    () => serde.deserialize(Buffer.from('{"orderId": '), ctx),
    (e: unknown) => {
      assert.ok(e instanceof JsonInvalidError && e instanceof SerdeError);
      assert.equal(e.code, 'JSON_INVALID');
      assert.equal(e.topic, 'orders');
      assert.equal(e.role, 'value');
      assert.equal(e.retriable, false);
      assert.match(e.message, /value on topic "orders"/);
      return true;
    },
  );
});

test('bytes that are not UTF-8 are JSON_INVALID, not silently replaced', () => {
  const serde = jsonSerde<string>();
  assert.throws(() => serde.deserialize(Buffer.from([0x22, 0xff, 0xfe, 0x22]), ctx), { code: 'JSON_INVALID' });
});

test('a validator rejecting the value gives VALUE_REJECTED; a throwing validator keeps its reason', () => {
  const serde = jsonSerde<Order>({ validate: isOrder });
  assert.deepEqual(serde.deserialize(Buffer.from('{"orderId":"o","amount":1,"tags":[]}'), ctx), {
    orderId: 'o',
    amount: 1,
    tags: [],
  });
  assert.throws(() => serde.deserialize(Buffer.from('{"orderId":1}'), ctx), (e: unknown) => {
    assert.ok(e instanceof ValueRejectedError);
    assert.equal(e.code, 'VALUE_REJECTED');
    return true;
  });
  const throwing = jsonSerde<Order>({
    validate: () => {
      throw new Error('amount must be positive');
    },
  });
  assert.throws(() => throwing.deserialize(Buffer.from('{}'), { topic: 'k', role: 'key' }), (e: unknown) => {
    assert.ok(e instanceof ValueRejectedError);
    assert.match(e.message, /key on topic "k".*amount must be positive/);
    return true;
  });
});

test('a tombstone is NULL_VALUE unless nullable', () => {
  const serde = jsonSerde<Order>();
  assert.throws(() => serde.deserialize(null, ctx), (e: unknown) => e instanceof NullValueError && e.code === 'NULL_VALUE');
  assert.throws(() => serde.serialize(null as unknown as Order, ctx), { code: 'NULL_VALUE', operation: 'serialize' });
  const nullable = jsonSerde<Order>({ nullable: true });
  assert.equal(nullable.deserialize(null, ctx), null);
  assert.equal(nullable.serialize(null, ctx), null);
});

test('values JSON cannot represent are VALUE_INVALID on serialize', () => {
  const serde = jsonSerde<unknown>();
  assert.throws(() => serde.serialize({ n: 1n }, ctx), (e: unknown) => e instanceof ValueInvalidError && e.code === 'VALUE_INVALID');
  const cyclic: { self?: unknown } = {};
  cyclic.self = cyclic;
  assert.throws(() => serde.serialize(cyclic, ctx), { code: 'VALUE_INVALID' });
  assert.throws(() => serde.serialize(() => 1, ctx), { code: 'VALUE_INVALID' });
});
