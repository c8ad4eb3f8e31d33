import { test } from 'node:test';
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { Agent } from 'node:http';
import { create, createFileRegistry, createMutableRegistry } from '@bufbuild/protobuf';
import { FileDescriptorProtoSchema, FieldDescriptorProto_Label, FieldDescriptorProto_Type } from '@bufbuild/protobuf/wkt';
import { ProtobufDeserializer, ProtobufSerializer, SchemaRegistryClient, SerdeType, type SchemaInfo } from '@confluentinc/schemaregistry';
import protobuf from 'protobufjs';
import descriptorTypes from 'protobufjs/ext/descriptor/index.js';
import { SchemaIncompatibleError, SchemaNotRegisteredError, registryProtobufSerde } from '../../src/serdes/index.ts';
import { testCluster } from '../support/cluster.ts';
import { readRecord } from '../support/serde-read.ts';

const freshTopic = () => `serdes-pb-it-${randomUUID()}`;

const v1 = `syntax = "proto3";
package onceflow.it;
message Order {
  string order_id = 1;
  int64 version = 2;
  string note = 3;
  Kind kind = 4;
}
enum Kind { STANDARD = 0; EXPRESS = 1; }
`;
// Field 3 removed, its number and name reserved, field 5 added: BACKWARD compatible.
const v2 = `syntax = "proto3";
package onceflow.it;
message Order {
  reserved 3;
  reserved "note";
  string order_id = 1;
  int64 version = 2;
  Kind kind = 4;
  repeated string tags = 5;
}
enum Kind { STANDARD = 0; EXPRESS = 1; }
`;
// Field 2 changes its type: data written as v1 cannot be read as this.
const breaking = v1.replace('int64 version = 2;', 'string version = 2;');

/**
 * Confluent's ProtobufDeserializer asks for writer schemas with `format=serialized` (a base64
 * FileDescriptorProto). Apicurio 3.3's Confluent API answers that with the raw descriptor bytes,
 * not base64, and with HTTP 500 for a schema stored in that form, so the deserializer cannot read
 * any record from it, not even its own serializer's. This client asks for the stored schema
 * instead and serializes a .proto text the way Confluent's registry does.
 */
class SerializedFormatFix extends SchemaRegistryClient {
  override async getBySubjectAndId(subject: string, id: number, format?: string): Promise<SchemaInfo> {
    const info = await super.getBySubjectAndId(subject, id);
    if (format !== 'serialized' || !/[;{"]/.test(info.schema)) return info;
    const root = protobuf.parse(info.schema, new protobuf.Root(), { keepCase: true }).root;
    const set = (root as unknown as { toDescriptor(syntax: string): { file: protobuf.Message[] } }).toDescriptor('proto3');
    const file = { ...set.file[0]!.toJSON(), name: `schema-${id}.proto` };
    return { ...info, schema: Buffer.from(descriptorTypes.FileDescriptorProto.encode(descriptorTypes.FileDescriptorProto.fromObject(file)).finish()).toString('base64') };
  }
}

test('Protobuf round trip through the registry: a fresh serde fetches the writer schema', async () => {
  const { registryUrl } = testCluster();
  const ctx = { topic: freshTopic(), role: 'value' } as const;
  const serde = registryProtobufSerde<{ order_id: string; version: bigint; note: string; kind: string }>({ schema: v1 });
  await serde.prepare?.(ctx, { registryUrl });
  const value = { order_id: 'o-1', version: 2n ** 62n, note: 'n', kind: 'EXPRESS' };
  const bytes = serde.serialize(value, ctx)!;
  assert.deepEqual([bytes[0], bytes[5]], [0, 0], 'magic byte, then message index [0]');
  const other = registryProtobufSerde<typeof value>({ schema: v1 });
  await other.prepare?.({ topic: freshTopic(), role: 'value' }, { registryUrl });
  assert.deepEqual({ ...(await readRecord(other, bytes, ctx)) }, value);
});

test('Protobuf evolution through the registry: v1 read by v2 and v2 read by v1; a changed field type is SCHEMA_INCOMPATIBLE', async () => {
  const { registryUrl } = testCluster();
  const ctx = { topic: freshTopic(), role: 'value' } as const;
  const writer = registryProtobufSerde<object>({ schema: v1 });
  await writer.prepare?.(ctx, { registryUrl });
  const old = writer.serialize({ order_id: 'o-2', version: 1, note: 'dropped by v2' }, ctx)!;
  const reader = registryProtobufSerde<object>({ schema: v2 });
  await reader.prepare?.(ctx, { registryUrl });
  assert.deepEqual({ ...(await readRecord(reader, old, ctx)) }, { order_id: 'o-2', version: 1n, kind: 'STANDARD', tags: [] });
  const newer = reader.serialize({ order_id: 'o-3', version: 2, tags: ['x'] }, ctx)!;
  assert.notEqual(newer.readUInt32BE(1), old.readUInt32BE(1));
  const v1reader = registryProtobufSerde<object>({ schema: v1 });
  await v1reader.prepare?.({ topic: freshTopic(), role: 'value' }, { registryUrl });
  assert.deepEqual({ ...(await readRecord(v1reader, newer, ctx)) }, { order_id: 'o-3', version: 2n, note: '', kind: 'STANDARD' });

  await assert.rejects(registryProtobufSerde<object>({ schema: breaking }).prepare!(ctx, { registryUrl }), (e: unknown) => {
    assert.ok(e instanceof SchemaIncompatibleError, String(e));
    assert.equal(e.subject, `${ctx.topic}-value`);
    return true;
  });
  const lookupOnly = registryProtobufSerde<object>({ schema: v1, autoRegister: false });
  await lookupOnly.prepare!(ctx, { registryUrl });
  assert.equal(lookupOnly.serialize({ order_id: 'o-4' }, ctx)!.readUInt32BE(1), old.readUInt32BE(1), 'looked up, not registered');
  const absent = registryProtobufSerde<object>({ schema: v1.replace('Order', 'Other'), autoRegister: false });
  await assert.rejects(absent.prepare!(ctx, { registryUrl }), SchemaNotRegisteredError);
});

test('interop with @confluentinc/schemaregistry ProtobufSerializer/ProtobufDeserializer, both ways', async () => {
  const { registryUrl } = testCluster();
  const topic = freshTopic();
  const ctx = { topic, role: 'value' } as const;
  // The descriptor Confluent's serializer needs, written out by hand: no code generator at build or test time.
  const file = create(FileDescriptorProtoSchema, {
    name: 'onceflow/it/interop.proto',
    package: 'onceflow.it',
    syntax: 'proto3',
    messageType: [
      {
        name: 'Interop',
        field: [
          { name: 'order_id', jsonName: 'orderId', number: 1, type: FieldDescriptorProto_Type.STRING, label: FieldDescriptorProto_Label.OPTIONAL },
          { name: 'version', jsonName: 'version', number: 2, type: FieldDescriptorProto_Type.INT64, label: FieldDescriptorProto_Label.OPTIONAL },
        ],
      },
    ],
  });
  const descriptor = createFileRegistry(file, () => undefined).getMessage('onceflow.it.Interop');
  assert.ok(descriptor);
  const client = new SchemaRegistryClient({ baseURLs: [registryUrl], createAxiosDefaults: { timeout: 5_000, httpAgent: new Agent({ keepAlive: false }) } });
  const theirSer = new ProtobufSerializer(client, SerdeType.VALUE, { autoRegisterSchemas: true, registry: createMutableRegistry(descriptor) });
  const readingClient = new SerializedFormatFix({ baseURLs: [registryUrl], createAxiosDefaults: { timeout: 5_000, httpAgent: new Agent({ keepAlive: false }) } });
  const theirDe = new ProtobufDeserializer(readingClient, SerdeType.VALUE, {});

  const fromThem = await theirSer.serialize(topic, create(descriptor, { orderId: 'c-1', version: 7n }));
  const ours = registryProtobufSerde<{ order_id: string; version: bigint }>({
    schema: 'syntax = "proto3";\npackage onceflow.it;\nmessage Interop {\n  string order_id = 1;\n  int64 version = 2;\n}\n',
  });
  // The same subject as theirs: Confluent's serializer registered a serialized descriptor there, ours registers the .proto text.
  await ours.prepare?.(ctx, { registryUrl });
  assert.deepEqual({ ...(await readRecord(ours, fromThem, ctx)) }, { order_id: 'c-1', version: 7n });

  const fromUs = ours.serialize({ order_id: 'o-1', version: 8n }, ctx)!;
  const theirs = (await theirDe.deserialize(topic, fromUs)) as { orderId?: string; order_id?: string; version: bigint };
  assert.deepEqual([theirs.order_id ?? theirs.orderId, theirs.version], ['o-1', 8n]);
});
