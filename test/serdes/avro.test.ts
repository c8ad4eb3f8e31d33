import { test } from 'node:test';
import assert from 'node:assert/strict';
import {
  AvroInvalidError,
  AvroLongUnsafeError,
  AvroSchemaError,
  AvroTrailingBytesError,
  AvroTruncatedError,
  SerdeError,
  ValueInvalidError,
  avroSerde,
} from '../../src/serdes/index.ts';

const ctx = { topic: 'orders', role: 'value' } as const;
const orderFile = new URL('./fixtures/order.avsc', import.meta.url);

interface Order<L> {
  eventId: string;
  orderId: string;
  customerId: string;
  status: 'NEW' | 'PAID' | 'SHIPPED';
  version: L;
  amount: string;
  createdAt: Date;
  note: string | null;
}

const order: Order<number> = {
  eventId: '123e4567-e89b-12d3-a456-426614174000',
  orderId: 'o-42',
  customerId: 'c-7',
  status: 'PAID',
  version: 3,
  amount: '-1234567890123456.78',
  createdAt: new Date('2024-05-01T12:34:56.789Z'),
  note: null,
};

// avsc decodes records into generated classes; compare the fields.
const plain = (v: unknown) => ({ ...(v as object) });

test('plain Avro round-trips a record from an .avsc file URL, with logical types', () => {
  const serde = avroSerde<Order<number>>({ schema: orderFile });
  const bytes = serde.serialize(order, ctx);
  assert.ok(bytes);
  const back = serde.deserialize(bytes, ctx);
  assert.deepEqual(plain(back), order);
  assert.ok(back.createdAt instanceof Date);
  assert.equal(back.amount, '-1234567890123456.78');
});

test('schema given as a path string, as JSON text and as an object all work', () => {
  const fromPath = avroSerde<Order<number>>({ schema: orderFile.pathname });
  const text = JSON.stringify({ type: 'record', name: 'P', fields: [{ name: 'x', type: 'int' }] });
  const fromText = avroSerde<{ x: number }>({ schema: text });
  const fromPrimitive = avroSerde<string>({ schema: 'string' });
  assert.deepEqual(plain(fromPath.deserialize(fromPath.serialize(order, ctx), ctx)), order);
  assert.equal(fromText.deserialize(fromText.serialize({ x: -5 }, ctx), ctx).x, -5);
  assert.equal(fromPrimitive.deserialize(fromPrimitive.serialize('hi', ctx), ctx), 'hi');
});

test('bad schemas fail at construction with AVRO_SCHEMA_INVALID', () => {
  assert.throws(() => avroSerde({ schema: '/nonexistent/order.avsc' }), (e: unknown) => e instanceof AvroSchemaError && e.code === 'AVRO_SCHEMA_INVALID');
  assert.throws(() => avroSerde({ schema: '{not json' }), { code: 'AVRO_SCHEMA_INVALID' });
  assert.throws(() => avroSerde({ schema: { type: 'record', name: 'R', fields: [{ name: 'x', type: 'nope' }] } }), {
    code: 'AVRO_SCHEMA_INVALID',
  });
  // A decimal without precision is a typo in our own schema: loud, not a silent fall-back to bytes.
  assert.throws(() => avroSerde({ schema: { type: 'bytes', logicalType: 'decimal' } }), { code: 'AVRO_SCHEMA_INVALID' });
});

test('decimal keeps every digit, on bytes and on fixed, and refuses what would round', () => {
  const bytesDec = avroSerde<string>({ schema: { type: 'bytes', logicalType: 'decimal', precision: 38, scale: 4 } });
  for (const [input, expected] of [
    ['0', '0.0000'],
    ['-0.0001', '-0.0001'],
    ['1.5', '1.5000'],
    ['12345678901234567890123456789012.3456', '12345678901234567890123456789012.3456'],
    ['-99999999999999999999999999999999.9999', '-99999999999999999999999999999999.9999'],
    ['+7.10000', '7.1000'],
    ['128', '128.0000'],
    ['-128', '-128.0000'],
  ] as const) {
    assert.equal(bytesDec.deserialize(bytesDec.serialize(input, ctx), ctx), expected, input);
  }
  const fixedDec = avroSerde<string>({
    schema: { type: 'fixed', name: 'Money', size: 8, logicalType: 'decimal', precision: 18, scale: 2 },
  });
  assert.equal(fixedDec.serialize('-1.00', ctx)?.length, 8);
  assert.equal(fixedDec.deserialize(fixedDec.serialize('-9999999999999999.99', ctx), ctx), '-9999999999999999.99');
  // More fraction digits than the scale, more digits than the precision, not a decimal string, a number.
  for (const bad of ['1.23456', '1' + '0'.repeat(38), 'abc', '1e5', 1.5]) {
    assert.throws(() => bytesDec.serialize(bad as string, ctx), (e: unknown) => e instanceof ValueInvalidError);
  }
  assert.throws(() => fixedDec.serialize('12345678901234567.00', ctx), { code: 'VALUE_INVALID' });
});

test('timestamp-millis is a Date both ways; uuid is a validated string', () => {
  const ts = avroSerde<Date>({ schema: { type: 'long', logicalType: 'timestamp-millis' } });
  const d = new Date(-86_400_000);
  assert.equal(ts.deserialize(ts.serialize(d, ctx), ctx).getTime(), d.getTime());
  assert.throws(() => ts.serialize(new Date(Number.NaN), ctx), { code: 'VALUE_INVALID' });
  assert.throws(() => ts.serialize(12 as unknown as Date, ctx), { code: 'VALUE_INVALID' });
  const uuid = avroSerde<string>({ schema: { type: 'string', logicalType: 'uuid' } });
  assert.equal(uuid.deserialize(uuid.serialize(order.eventId, ctx), ctx), order.eventId);
  assert.throws(() => uuid.serialize('not-a-uuid', ctx), { code: 'VALUE_INVALID' });
});

test("longs: 'number' mode refuses unsafe values both ways; 'bigint' mode keeps all 64 bits", () => {
  const asBig = avroSerde<Order<bigint>>({ schema: orderFile, longs: 'bigint' });
  const asNum = avroSerde<Order<number>>({ schema: orderFile });
  for (const v of [2n ** 63n - 1n, -(2n ** 63n), 2n ** 53n, -(2n ** 53n) - 1n]) {
    const bytes = asBig.serialize({ ...order, version: v }, ctx);
    assert.equal(asBig.deserialize(bytes, ctx).version, v);
    assert.throws(
      () => asNum.deserialize(bytes, ctx),
      (e: unknown) => e instanceof AvroLongUnsafeError && e.code === 'AVRO_LONG_UNSAFE' && e.value === v,
    );
  }
  // The edge of the safe range still decodes as a number.
  const edge = asBig.serialize({ ...order, version: BigInt(Number.MAX_SAFE_INTEGER) }, ctx);
  assert.equal(asNum.deserialize(edge, ctx).version, Number.MAX_SAFE_INTEGER);
  // bigint mode accepts safe numbers on encode but always hands back bigint.
  assert.equal(asBig.deserialize(asBig.serialize({ ...order, version: 5 as unknown as bigint }, ctx), ctx).version, 5n);
  assert.throws(() => asNum.serialize({ ...order, version: 2 ** 60 }, ctx), (e: unknown) => {
    assert.ok(e instanceof ValueInvalidError);
    assert.deepEqual(e.paths, ['version']);
    return true;
  });
  assert.throws(() => asBig.serialize({ ...order, version: 2n ** 63n }, ctx), { code: 'VALUE_INVALID' });
});

test('VALUE_INVALID names the offending fields', () => {
  const serde = avroSerde<Order<number>>({ schema: orderFile });
  const bad = { ...order, status: 'LOST', customerId: 7 } as unknown as Order<number>;
  assert.throws(() => serde.serialize(bad, ctx), (e: unknown) => {
    assert.ok(e instanceof ValueInvalidError);
    assert.deepEqual([...e.paths].sort(), ['customerId', 'status']);
    return true;
  });
  assert.throws(() => serde.serialize(null as unknown as Order<number>, ctx), { code: 'NULL_VALUE' });
});

test('every truncation of a body is a SerdeError; cutting inside the trailing fields is AVRO_TRUNCATED', () => {
  const serde = avroSerde<Order<number>>({ schema: orderFile });
  const bytes = serde.serialize({ ...order, note: 'a note long enough to cut into' }, ctx);
  assert.ok(bytes);
  for (let cut = 0; cut < bytes.length; cut++) {
    assert.throws(() => serde.deserialize(bytes.subarray(0, cut), ctx), (e: unknown) => e instanceof SerdeError, `cut at ${cut}`);
  }
  assert.throws(
    () => serde.deserialize(bytes.subarray(0, bytes.length - 3), ctx),
    (e: unknown) => e instanceof AvroTruncatedError && e.code === 'AVRO_TRUNCATED',
  );
  assert.throws(() => serde.deserialize(Buffer.alloc(0), ctx), { code: 'AVRO_TRUNCATED' });
});

test('trailing bytes, bad enum/union indexes and tombstones have their own codes', () => {
  const serde = avroSerde<Order<number>>({ schema: orderFile });
  const bytes = serde.serialize(order, ctx);
  assert.ok(bytes);
  assert.throws(
    () => serde.deserialize(Buffer.concat([bytes, Buffer.from([1, 2])]), ctx),
    (e: unknown) => e instanceof AvroTrailingBytesError && e.code === 'AVRO_TRAILING_BYTES',
  );
  const union = avroSerde<string | null>({ schema: ['null', 'string'] });
  // Zig-zag 10 = union branch 5, which does not exist.
  assert.throws(() => union.deserialize(Buffer.from([10]), ctx), (e: unknown) => e instanceof AvroInvalidError && e.code === 'AVRO_INVALID');
  const en = avroSerde<string>({ schema: { type: 'enum', name: 'E', symbols: ['A'] } });
  assert.throws(() => en.deserialize(Buffer.from([4]), ctx), { code: 'AVRO_INVALID' });
  assert.throws(() => serde.deserialize(null, ctx), { code: 'NULL_VALUE' });
});
