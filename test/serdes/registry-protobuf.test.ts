import { test } from 'node:test';
import assert from 'node:assert/strict';
import {
  ProtobufInvalidError,
  ProtobufSchemaError,
  SchemaNotFoundError,
  SchemaUnresolvableError,
  ValueInvalidError,
  WireMagicByteError,
  registryJsonSchemaSerde,
  registryProtobufSerde,
  type Serde,
} from '../../src/serdes/index.ts';
import { decodeMessageIndexes, encodeMessageIndexes } from '../../src/serdes/protobuf-schema.ts';
import { FakeRegistry } from '../support/fake-registry.ts';
import { readRecord } from '../support/serde-read.ts';

const ctx = { topic: 'orders', role: 'value' } as const;
const env = { registryUrl: 'fake://registry' };

const v1 = `syntax = "proto3";
package shop;
message Order {
  string order_id = 1;
  int64 version = 2;
  string obsolete = 3;
  Status status = 4;
  repeated Line lines = 5;
  message Line { string sku = 1; int32 quantity = 2; }
}
enum Status { NEW = 0; PAID = 1; }
`;
// v2: field 3 removed (reserved), field 6 added.
const v2 = `syntax = "proto3";
package shop;
message Order {
  reserved 3;
  string order_id = 1;
  int64 version = 2;
  Status status = 4;
  repeated Line lines = 5;
  string region = 6;
  message Line { string sku = 1; int32 quantity = 2; }
}
enum Status { NEW = 0; PAID = 1; }
`;

const readWith = <T>(serde: Serde<T>, bytes: Buffer | null) => readRecord(serde, bytes, ctx);

test('message indexes: [0] is one zero byte, others are zigzag varints with the count first', () => {
  assert.deepEqual(encodeMessageIndexes([0]), Buffer.from([0]));
  assert.deepEqual(encodeMessageIndexes([1]), Buffer.from([2, 2]));
  assert.deepEqual(encodeMessageIndexes([0, 2]), Buffer.from([4, 0, 4]));
  assert.deepEqual(encodeMessageIndexes([70]), Buffer.from([2, 0x8c, 0x01]));
  for (const indexes of [[0], [1], [0, 2], [70], [3, 1, 0]]) {
    const bytes = Buffer.concat([Buffer.from([9]), encodeMessageIndexes(indexes), Buffer.from([0x0a])]);
    assert.deepEqual(decodeMessageIndexes(bytes, 1), { indexes, bodyStart: bytes.length - 1 });
  }
  assert.equal(typeof decodeMessageIndexes(Buffer.from([4, 0]), 0), 'string');
});

test('wire format and round trip: magic 0, id, index [0], body; enums by name, int64 as bigint, defaults filled', async () => {
  const reg = new FakeRegistry();
  const serde = registryProtobufSerde<object>({ schema: v1, client: reg });
  await serde.prepare?.(ctx, env);
  assert.equal(serde.name, 'registry-protobuf:shop.Order');
  const bytes = serde.serialize({ order_id: 'o-1', version: 2n ** 60n, status: 'PAID', lines: [{ sku: 'a', quantity: 2 }] }, ctx);
  assert.ok(bytes);
  assert.deepEqual([...bytes.subarray(0, 6)], [0, 0, 0, 0, 1, 0]);
  assert.equal(reg.types.get(1), 'PROTOBUF');
  assert.deepEqual(reg.subjects.get('orders-value'), [1]);
  assert.equal(serde.resolve?.(bytes, ctx), null, 'our own id needs no fetch');
  assert.deepEqual({ ...serde.deserialize(bytes, ctx) }, { order_id: 'o-1', version: 2n ** 60n, obsolete: '', status: 'PAID', lines: [{ sku: 'a', quantity: 2 }] });
  const text = registryProtobufSerde<{ version: string }>({ schema: v1, client: reg, longs: 'string' });
  await text.prepare?.(ctx, env);
  assert.equal(text.deserialize(bytes, ctx).version, String(2n ** 60n));
});

test('a nested message is written with its index path and read by a serde of the same message', async () => {
  const reg = new FakeRegistry();
  const lines = registryProtobufSerde<object>({ schema: v1, messageName: 'Order.Line', client: reg });
  await lines.prepare?.(ctx, env);
  const bytes = lines.serialize({ sku: 's', quantity: 3 }, ctx);
  assert.deepEqual([...bytes!.subarray(5, 8)], [4, 0, 0]);
  assert.deepEqual({ ...lines.deserialize(bytes, ctx) }, { sku: 's', quantity: 3 });
  const orders = registryProtobufSerde<object>({ schema: v1, client: reg });
  await orders.prepare?.({ topic: 'other', role: 'value' }, env);
  assert.throws(() => orders.deserialize(bytes, ctx), (e: unknown) => e instanceof ProtobufInvalidError && /shop\.Order\.Line.*reads shop\.Order/.test(e.message));
});

test('evolution: v1 written, v2 read (removed field skipped, new field defaulted), and back', async () => {
  const reg = new FakeRegistry();
  const writer = registryProtobufSerde<object>({ schema: v1, client: reg });
  await writer.prepare?.(ctx, env);
  const reader = registryProtobufSerde<object>({ schema: v2, client: reg });
  await reader.prepare?.(ctx, env);
  const old = writer.serialize({ order_id: 'o', version: 1, obsolete: 'gone' }, ctx);
  const pending = reader.resolve?.(old, ctx);
  assert.ok(pending instanceof Promise, 'the writer schema id is new to the reader');
  await pending;
  assert.deepEqual({ ...reader.deserialize(old, ctx) }, { order_id: 'o', version: 1n, status: 'NEW', lines: [], region: '' });
  const newer = reader.serialize({ order_id: 'n', version: 2, region: 'eu' }, ctx);
  assert.deepEqual({ ...(await readWith(writer, newer)) }, { order_id: 'n', version: 2n, obsolete: '', status: 'NEW', lines: [] });
});

test('values that do not fit are VALUE_INVALID with their paths; nothing is coerced', async () => {
  const reg = new FakeRegistry();
  const serde = registryProtobufSerde<unknown>({ schema: v1, client: reg });
  await serde.prepare?.(ctx, env);
  const invalid = (value: unknown, path: RegExp) =>
    assert.throws(() => serde.serialize(value, ctx), (e: unknown) => e instanceof ValueInvalidError && e.code === 'VALUE_INVALID' && e.paths.some((p) => path.test(p)));
  invalid({ order_id: 7 }, /^order_id: string expected/);
  invalid({ version: 'abc' }, /^version: int64 expected/);
  invalid({ status: 'SHIPPED' }, /^status: a value of enum Status/);
  invalid({ lines: [{ quantity: 1.5 }] }, /^lines\[0\]\.quantity: int32 expected/);
  invalid({ lines: {} }, /^lines: array expected/);
  invalid({ ordr_id: 'typo' }, /^ordr_id: Order has no such field/);
  invalid('a string', /^\(root\)/);
});

test('bad payloads are the serde\'s typed errors, for the dead-letter topic', async () => {
  const reg = new FakeRegistry();
  const serde = registryProtobufSerde<object>({ schema: v1, client: reg });
  await serde.prepare?.(ctx, env);
  const good = serde.serialize({ order_id: 'order-123', version: 5 }, ctx)!;
  const code = (bytes: Buffer) => {
    try {
      serde.deserialize(bytes, ctx);
      return 'decoded';
    } catch (e) {
      return (e as { code?: string }).code;
    }
  };
  assert.equal(code(Buffer.from('{"order_id":"o"}')), 'WIRE_MAGIC_BYTE');
  assert.equal(code(good.subarray(0, good.length - 3)), 'PROTOBUF_INVALID');
  assert.equal(code(Buffer.concat([good.subarray(0, 5), Buffer.from([2, 8])])), 'PROTOBUF_INVALID', 'index 4 of a file with one message');
  assert.equal(code(Buffer.concat([good.subarray(0, 5), Buffer.from([0, 0xff, 0xff])])), 'PROTOBUF_INVALID');
  assert.ok(new WireMagicByteError(ctx, 'deserialize', 'x') instanceof Error);
});

test('unknown ids are SCHEMA_NOT_FOUND; a JSON Schema id is SCHEMA_UNRESOLVABLE for a Protobuf reader', async () => {
  const reg = new FakeRegistry();
  const serde = registryProtobufSerde<object>({ schema: v1, client: reg });
  await serde.prepare?.(ctx, env);
  await assert.rejects(readWith(serde, Buffer.from([0, 0, 0, 0x30, 0x39, 0, 0x0a, 0])), (e: unknown) => e instanceof SchemaNotFoundError);
  const json = registryJsonSchemaSerde<object>({ schema: { type: 'object' }, client: reg });
  await json.prepare?.({ topic: 'j', role: 'value' }, env);
  const jsonBytes = json.serialize({ a: 1 }, { topic: 'j', role: 'value' });
  await assert.rejects(readWith(serde, jsonBytes), (e: unknown) => e instanceof SchemaUnresolvableError && /JSON schema, not Protobuf/.test(e.message));
});

test('an unusable reader schema fails at construction with PROTOBUF_SCHEMA_INVALID', () => {
  for (const schema of ['message {', 'syntax = "proto3"; import "other.proto"; message A { string a = 1; }', 'syntax = "proto3"; enum E { A = 0; }', '/nonexistent/x.proto']) {
    assert.throws(() => registryProtobufSerde({ schema }), (e: unknown) => e instanceof ProtobufSchemaError && e.code === 'PROTOBUF_SCHEMA_INVALID', schema);
  }
  assert.throws(() => registryProtobufSerde({ schema: v1, messageName: 'Nope' }), ProtobufSchemaError);
});
