import { test } from 'node:test';
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { Agent } from 'node:http';
import { JsonDeserializer, JsonSerializer, SchemaRegistryClient, SerdeType } from '@confluentinc/schemaregistry';
import { JsonSchemaViolationError, SchemaIncompatibleError, SchemaNotFoundError, registryJsonSchemaSerde } from '../../src/serdes/index.ts';
import { testCluster } from '../support/cluster.ts';
import { readRecord } from '../support/serde-read.ts';

const freshTopic = () => `serdes-json-it-${randomUUID()}`;

const v1 = {
  $schema: 'http://json-schema.org/draft-07/schema#',
  title: 'Order',
  type: 'object',
  properties: { orderId: { type: 'string' }, cents: { type: 'integer' } },
  required: ['orderId', 'cents'],
  // A closed content model: only then is adding a property BACKWARD compatible (an open v1 let
  // producers send `status` with any type already).
  additionalProperties: false,
};
// An optional property with a default: v1 records still validate, and read with it filled in.
const v2 = { ...v1, properties: { ...v1.properties, status: { type: 'string', default: 'NEW' } } };
// cents changes its type: v1 records no longer validate.
const breaking = { ...v1, properties: { ...v1.properties, cents: { type: 'string' } } };

test('JSON Schema round trip and evolution through the registry; a changed property type is SCHEMA_INCOMPATIBLE', async () => {
  const { registryUrl } = testCluster();
  const ctx = { topic: freshTopic(), role: 'value' } as const;
  const writer = registryJsonSchemaSerde<{ orderId: string; cents: number }>({ schema: v1 });
  await writer.prepare?.(ctx, { registryUrl });
  const old = writer.serialize({ orderId: 'o-1', cents: 5 }, ctx)!;
  const fresh = registryJsonSchemaSerde<{ orderId: string; cents: number }>({ schema: v1 });
  await fresh.prepare?.({ topic: freshTopic(), role: 'value' }, { registryUrl });
  assert.deepEqual(await readRecord(fresh, old, ctx), { orderId: 'o-1', cents: 5 });

  const reader = registryJsonSchemaSerde<{ orderId: string; cents: number; status: string }>({ schema: v2 });
  await reader.prepare?.(ctx, { registryUrl });
  assert.deepEqual(await readRecord(reader, old, ctx), { orderId: 'o-1', cents: 5, status: 'NEW' });
  const newer = reader.serialize({ orderId: 'o-2', cents: 6, status: 'PAID' }, ctx)!;
  assert.notEqual(newer.readUInt32BE(1), old.readUInt32BE(1));

  await assert.rejects(registryJsonSchemaSerde<object>({ schema: breaking }).prepare!(ctx, { registryUrl }), (e: unknown) => e instanceof SchemaIncompatibleError && e.code === 'SCHEMA_INCOMPATIBLE');
  // Registered elsewhere, the breaking schema reads a v1 record only to refuse it.
  const strict = registryJsonSchemaSerde<object>({ schema: breaking });
  await strict.prepare?.({ topic: freshTopic(), role: 'value' }, { registryUrl });
  await assert.rejects(readRecord(strict, old, ctx), (e: unknown) => e instanceof JsonSchemaViolationError && e.paths.join() === '/cents must be string');
  // An id the registry never gave out: its 404 is the record's SCHEMA_NOT_FOUND, for the dead-letter topic.
  await assert.rejects(readRecord(strict, Buffer.from([0, 0x7f, 0xff, 0xff, 0xf0, 0x7b, 0x7d]), ctx), SchemaNotFoundError);
});

test('interop with @confluentinc/schemaregistry JsonSerializer/JsonDeserializer, both ways', async () => {
  const { registryUrl } = testCluster();
  const topic = freshTopic();
  const ctx = { topic, role: 'value' } as const;
  const ours = registryJsonSchemaSerde<{ orderId: string; cents: number }>({ schema: v1 });
  await ours.prepare?.(ctx, { registryUrl });

  const client = new SchemaRegistryClient({ baseURLs: [registryUrl], createAxiosDefaults: { timeout: 5_000, httpAgent: new Agent({ keepAlive: false }) } });
  const theirSer = new JsonSerializer(client, SerdeType.VALUE, { useLatestVersion: true, validate: true });
  const theirDe = new JsonDeserializer(client, SerdeType.VALUE, { validate: true });

  const fromThem = await theirSer.serialize(topic, { orderId: 'c-1', cents: 7 });
  assert.equal(fromThem[0], 0);
  assert.deepEqual(await readRecord(ours, fromThem, ctx), { orderId: 'c-1', cents: 7 });
  const fromUs = ours.serialize({ orderId: 'o-1', cents: 8 }, ctx)!;
  assert.deepEqual(await theirDe.deserialize(topic, fromUs), { orderId: 'o-1', cents: 8 });
});
