import { test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import {
  JsonInvalidError,
  JsonSchemaError,
  JsonSchemaViolationError,
  SchemaUnresolvableError,
  ValueInvalidError,
  registryAvroSerde,
  registryJsonSchemaSerde,
  type Serde,
} from '../../src/serdes/index.ts';
import { FakeRegistry } from '../support/fake-registry.ts';
import { readRecord } from '../support/serde-read.ts';

const ctx = { topic: 'orders', role: 'value' } as const;
const env = { registryUrl: 'fake://registry' };

const v1 = {
  $schema: 'http://json-schema.org/draft-07/schema#',
  title: 'Order',
  type: 'object',
  properties: { orderId: { type: 'string' }, cents: { type: 'integer', minimum: 0 }, placedAt: { type: 'string', format: 'date-time' } },
  required: ['orderId', 'cents'],
};
// v2 reads v1 records: the new property is optional and has a default.
const v2 = { ...v1, properties: { ...v1.properties, status: { type: 'string', enum: ['NEW', 'PAID'], default: 'NEW' } } };

const readWith = <T>(serde: Serde<T>, bytes: Buffer | null) => readRecord(serde, bytes, ctx);

test('wire format and round trip: magic 0, id, JSON text; registered as JSON', async () => {
  const reg = new FakeRegistry();
  const serde = registryJsonSchemaSerde<{ orderId: string; cents: number }>({ schema: v1, client: reg });
  await serde.prepare?.(ctx, env);
  assert.equal(serde.name, 'registry-json-schema:Order');
  const bytes = serde.serialize({ orderId: 'o-1', cents: 250 }, ctx);
  assert.deepEqual([...bytes!.subarray(0, 5)], [0, 0, 0, 0, 1]);
  assert.deepEqual(JSON.parse(bytes!.subarray(5).toString()), { orderId: 'o-1', cents: 250 });
  assert.equal(reg.types.get(1), 'JSON');
  assert.deepEqual(serde.deserialize(bytes, ctx), { orderId: 'o-1', cents: 250 });
});

test('evolution: a v1 record read with v2 gets the default; a v2 record read with v1 keeps the extra property', async () => {
  const reg = new FakeRegistry();
  const writer = registryJsonSchemaSerde<object>({ schema: v1, client: reg });
  await writer.prepare?.(ctx, env);
  const reader = registryJsonSchemaSerde<object>({ schema: v2, client: reg });
  await reader.prepare?.(ctx, env);
  const old = writer.serialize({ orderId: 'o', cents: 1 }, ctx);
  assert.deepEqual(await readWith(reader, old), { orderId: 'o', cents: 1, status: 'NEW' });
  const newer = reader.serialize({ orderId: 'n', cents: 2, status: 'PAID' }, ctx);
  assert.deepEqual(await readWith(writer, newer), { orderId: 'n', cents: 2, status: 'PAID' });
});

test('records that do not validate against the reader schema are JSON_SCHEMA_VIOLATION; broken JSON is JSON_INVALID', async () => {
  const reg = new FakeRegistry();
  const loose = registryJsonSchemaSerde<object>({ schema: { type: 'object' }, client: reg });
  await loose.prepare?.(ctx, env);
  const strict = registryJsonSchemaSerde<object>({ schema: v2, client: reg });
  await strict.prepare?.({ topic: 'other', role: 'value' }, env);
  const bad = loose.serialize({ orderId: 'o', cents: -1, status: 'LOST', placedAt: 'yesterday' }, ctx);
  await assert.rejects(readWith(strict, bad), (e: unknown) => {
    assert.ok(e instanceof JsonSchemaViolationError);
    assert.equal(e.code, 'JSON_SCHEMA_VIOLATION');
    assert.deepEqual([...e.paths].sort(), ['/cents must be >= 0', '/placedAt must match format "date-time"', '/status must be equal to one of the allowed values']);
    return true;
  });
  const framed = Buffer.concat([bad!.subarray(0, 5), Buffer.from('{"orderId":')]);
  await assert.rejects(readWith(strict, framed), JsonInvalidError);
});

test('serialize validates the value as JSON will carry it: VALUE_INVALID with paths', async () => {
  const reg = new FakeRegistry();
  const serde = registryJsonSchemaSerde<unknown>({ schema: v1, client: reg });
  await serde.prepare?.(ctx, env);
  assert.throws(() => serde.serialize({ orderId: 'o' }, ctx), (e: unknown) => e instanceof ValueInvalidError && e.paths[0] === "/ must have required property 'cents'");
  assert.throws(() => serde.serialize({ orderId: 'o', cents: 1n }, ctx), ValueInvalidError);
  // A Date is carried as its ISO text, which the date-time format accepts.
  const bytes = serde.serialize({ orderId: 'o', cents: 1, placedAt: new Date(0) }, ctx);
  assert.equal((serde.deserialize(bytes, ctx) as { placedAt: string }).placedAt, '1970-01-01T00:00:00.000Z');
});

test('drafts 2019-09 and 2020-12 by $schema; schema from a .json file; an Avro id is SCHEMA_UNRESOLVABLE', async () => {
  const reg = new FakeRegistry();
  const file = join(mkdtempSync(join(tmpdir(), 'onceflow-json-schema-')), 'order.schema.json');
  writeFileSync(file, JSON.stringify({ $schema: 'https://json-schema.org/draft/2020-12/schema', type: 'object', prefixItems: [{ type: 'object' }], properties: { n: { type: 'integer' } } }));
  const serde = registryJsonSchemaSerde<{ n: number }>({ schema: file, client: reg });
  await serde.prepare?.(ctx, env);
  assert.throws(() => serde.serialize({ n: 1.5 }, ctx), ValueInvalidError);
  const draft2019 = registryJsonSchemaSerde<object>({ schema: { $schema: 'https://json-schema.org/draft/2019-09/schema', type: 'object', dependentRequired: { a: ['b'] } }, client: reg });
  await draft2019.prepare?.({ topic: 'd', role: 'value' }, env);
  assert.throws(() => draft2019.serialize({ a: 1 }, { topic: 'd', role: 'value' }), ValueInvalidError);
  const avro = registryAvroSerde<string>({ schema: 'string', client: reg });
  await avro.prepare?.({ topic: 'a', role: 'value' }, env);
  await assert.rejects(readWith(serde, avro.serialize('x', { topic: 'a', role: 'value' })), (e: unknown) => e instanceof SchemaUnresolvableError && /AVRO schema/.test(e.message));
});

test('an unusable reader schema fails at construction with JSON_SCHEMA_INVALID', () => {
  for (const schema of ['{not json', '/nonexistent/order.json', { type: 'no-such-type' }, '[1]']) {
    assert.throws(() => registryJsonSchemaSerde({ schema }), (e: unknown) => e instanceof JsonSchemaError && e.code === 'JSON_SCHEMA_INVALID', String(schema));
  }
});
