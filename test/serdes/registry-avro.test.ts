import { test } from 'node:test';
import assert from 'node:assert/strict';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import {
  RegistryNotConfiguredError,
  RegistryUnavailableError,
  SchemaIncompatibleError,
  SchemaNotFoundError,
  SchemaNotRegisteredError,
  SchemaUnresolvableError,
  SerdeError,
  SerdeNotPreparedError,
  WireHeaderTruncatedError,
  WireMagicByteError,
  avroSerde,
  registryAvroSerde,
} from '../../src/serdes/index.ts';
import { parseAvroSchema } from '../../src/serdes/avro-types.ts';
import { FakeRegistry } from '../support/fake-registry.ts';

const ctx = { topic: 'orders', role: 'value' } as const;
const plain = (v: unknown) => ({ ...(v as object) });

const v1 = {
  type: 'record',
  name: 'Order',
  namespace: 't',
  fields: [
    { name: 'orderId', type: 'string' },
    { name: 'version', type: 'long' },
    { name: 'obsolete', type: 'string', default: '' },
  ],
};
// v2: a field added with a default, one removed.
const v2 = {
  ...v1,
  fields: [
    { name: 'orderId', type: 'string' },
    { name: 'version', type: 'long' },
    { name: 'status', type: 'string', default: 'NEW' },
  ],
};

const env = { registryUrl: 'fake://registry' };
const fast = { attempts: 3, initialDelayMs: 1, maxDelayMs: 2 };

async function readWith<T>(serde: ReturnType<typeof registryAvroSerde<T>>, bytes: Buffer | null): Promise<T> {
  const pending = serde.resolve?.(bytes, ctx) ?? null;
  if (pending !== null) await pending;
  return serde.deserialize(bytes, ctx);
}

test('wire format: magic 0, big-endian id, then a plain Avro body; round trip', async () => {
  const reg = new FakeRegistry();
  reg.byId.set(1, '"string"').set(2, '"int"').set(3, '"long"'); // push our id past 255
  for (let i = 4; i <= 300; i++) reg.byId.set(i, `{"type":"fixed","name":"F${i}","size":1}`);
  const serde = registryAvroSerde<{ orderId: string; version: number; obsolete: string }>({ schema: v1, client: reg });
  await serde.prepare?.(ctx, env);
  const value = { orderId: 'o-1', version: 9, obsolete: 'x' };
  const bytes = serde.serialize(value, ctx);
  assert.ok(bytes);
  assert.equal(bytes[0], 0);
  assert.equal(bytes.readUInt32BE(1), 301);
  const body = avroSerde<typeof value>({ schema: v1 }).serialize(value, ctx);
  assert.deepEqual(bytes.subarray(5), body);
  // Our own id is known after prepare: no fetch needed to read it back.
  assert.equal(serde.resolve?.(bytes, ctx), null);
  assert.deepEqual(plain(serde.deserialize(bytes, ctx)), value);
  assert.deepEqual(reg.subjects.get('orders-value'), [301]);
});

test('prepare registers under <topic>-key / <topic>-value or an explicit subject', async () => {
  const reg = new FakeRegistry();
  const serde = registryAvroSerde<string>({ schema: 'string', client: reg });
  await serde.prepare?.({ topic: 'a', role: 'key' }, env);
  await serde.prepare?.({ topic: 'a', role: 'value' }, env);
  const named = registryAvroSerde<string>({ schema: 'string', client: reg, subject: (c) => `custom.${c.topic}` });
  await named.prepare?.({ topic: 'b', role: 'value' }, env);
  assert.deepEqual([...reg.subjects.keys()].sort(), ['a-key', 'a-value', 'custom.b']);
});

test('a v1 writer is read by a v2 reader (added field default, removed field dropped), resolver built once', async () => {
  const reg = new FakeRegistry();
  const writer = registryAvroSerde<object>({ schema: v1, client: reg });
  await writer.prepare?.(ctx, env);
  const reader = registryAvroSerde<{ orderId: string; version: number; status: string }>({ schema: v2, client: reg });
  await reader.prepare?.({ topic: 'other', role: 'value' }, env);
  const bytes = writer.serialize({ orderId: 'o', version: 1, obsolete: 'gone' }, ctx);
  assert.ok(bytes);
  const first = reader.resolve?.(bytes, ctx);
  assert.ok(first instanceof Promise);
  // A second record with the same id while the fetch is in flight shares it.
  assert.equal(reader.resolve?.(bytes, ctx), first);
  assert.throws(() => reader.deserialize(bytes, ctx), (e: unknown) => e instanceof SerdeNotPreparedError && !(e instanceof SerdeError));
  await first;
  const callsAfter = reg.calls;
  assert.deepEqual(plain(reader.deserialize(bytes, ctx)), { orderId: 'o', version: 1, status: 'NEW' });
  assert.equal(reader.resolve?.(bytes, ctx), null);
  reader.deserialize(bytes, ctx);
  assert.equal(reg.calls, callsAfter);
});

test('unknown id is SCHEMA_NOT_FOUND after resolve; the 404 is remembered', async () => {
  const reg = new FakeRegistry();
  const serde = registryAvroSerde<object>({ schema: v1, client: reg });
  await serde.prepare?.(ctx, env);
  const bytes = Buffer.from([0, 0, 0, 0x30, 0x39, 2, 0x61]);
  await serde.resolve?.(bytes, ctx);
  const calls = reg.calls;
  assert.equal(serde.resolve?.(bytes, ctx), null);
  assert.equal(reg.calls, calls);
  assert.throws(() => serde.deserialize(bytes, ctx), (e: unknown) => {
    assert.ok(e instanceof SchemaNotFoundError);
    assert.equal(e.code, 'SCHEMA_NOT_FOUND');
    assert.match(e.message, /12345/);
    return true;
  });
});

test('a writer schema the reader cannot resolve is SCHEMA_UNRESOLVABLE', async () => {
  const reg = new FakeRegistry();
  const other = registryAvroSerde<{ n: number }>({
    schema: { type: 'record', name: 'Other', fields: [{ name: 'n', type: 'int' }] },
    client: reg,
  });
  await other.prepare?.({ topic: 'x', role: 'value' }, env);
  const bytes = other.serialize({ n: 1 }, { topic: 'x', role: 'value' });
  const serde = registryAvroSerde<object>({ schema: v1, client: reg });
  await serde.prepare?.(ctx, env);
  await serde.resolve?.(bytes, ctx);
  assert.throws(() => serde.deserialize(bytes, ctx), (e: unknown) => e instanceof SchemaUnresolvableError && e.code === 'SCHEMA_UNRESOLVABLE');
});

test('malformed frames: WIRE_MAGIC_BYTE, WIRE_HEADER_TRUNCATED, AVRO_TRUNCATED, NULL_VALUE; resolve stays sync for them', async () => {
  const reg = new FakeRegistry();
  const serde = registryAvroSerde<object>({ schema: v1, client: reg });
  await serde.prepare?.(ctx, env);
  const good = serde.serialize({ orderId: 'order-123', version: 1, obsolete: '' }, ctx);
  assert.ok(good);
  const wrongMagic = Buffer.from(good);
  wrongMagic[0] = 1;
  const json = Buffer.from('{"orderId":"o"}');
  for (const [bytes, code, cls] of [
    [wrongMagic, 'WIRE_MAGIC_BYTE', WireMagicByteError],
    [json, 'WIRE_MAGIC_BYTE', WireMagicByteError],
    [good.subarray(0, 3), 'WIRE_HEADER_TRUNCATED', WireHeaderTruncatedError],
    [Buffer.alloc(0), 'WIRE_HEADER_TRUNCATED', WireHeaderTruncatedError],
    [good.subarray(0, good.length - 2), 'AVRO_TRUNCATED', SerdeError],
    [good.subarray(0, 5), 'AVRO_TRUNCATED', SerdeError],
  ] as const) {
    assert.equal(serde.resolve?.(bytes, ctx), null, code);
    assert.throws(() => serde.deserialize(bytes, ctx), (e: unknown) => e instanceof cls && (e as SerdeError).code === code, code);
  }
  assert.throws(() => serde.deserialize(null, ctx), { code: 'NULL_VALUE' });
});

test('transient registry errors are retried a bounded number of times, then REGISTRY_UNAVAILABLE', async () => {
  const reg = new FakeRegistry();
  reg.failures = 2;
  const serde = registryAvroSerde<string>({ schema: 'string', client: reg, retry: fast });
  await serde.prepare?.(ctx, env);
  assert.equal(reg.calls, 3);

  const down = new FakeRegistry();
  down.failures = 100;
  const failing = registryAvroSerde<string>({ schema: 'string', client: down, retry: fast });
  await assert.rejects(failing.prepare?.(ctx, env) ?? Promise.resolve(), (e: unknown) => {
    assert.ok(e instanceof RegistryUnavailableError);
    assert.ok(!(e instanceof SerdeError));
    assert.equal(e.retriable, true);
    assert.match(e.message, /gave up after 3 attempts/);
    return true;
  });
  assert.equal(down.calls, 3);
});

test('resolve rejects with REGISTRY_UNAVAILABLE (not a poison record) and a later resolve retries', async () => {
  const reg = new FakeRegistry();
  const writer = registryAvroSerde<object>({ schema: v1, client: reg });
  await writer.prepare?.(ctx, env);
  const bytes = writer.serialize({ orderId: 'o', version: 1, obsolete: '' }, ctx);
  const reader = registryAvroSerde<object>({ schema: v2, client: reg, retry: fast });
  await reader.prepare?.({ topic: 'r', role: 'value' }, env);
  reg.failures = 3;
  await assert.rejects(reader.resolve?.(bytes, ctx) ?? Promise.resolve(), { code: 'REGISTRY_UNAVAILABLE' });
  assert.deepEqual(plain(await readWith(reader, bytes)), { orderId: 'o', version: 1, status: 'NEW' });
});

test('incompatible schema fails prepare with SCHEMA_INCOMPATIBLE; lookup-only mode fails with SCHEMA_NOT_REGISTERED', async () => {
  const reg = new FakeRegistry();
  const schema = JSON.stringify(parseAvroSchema(v2).schema({ exportAttrs: true }));
  reg.incompatible.add(schema);
  const serde = registryAvroSerde<object>({ schema: v2, client: reg });
  await assert.rejects(serde.prepare?.(ctx, env) ?? Promise.resolve(), (e: unknown) => e instanceof SchemaIncompatibleError);
  const lookupOnly = registryAvroSerde<object>({ schema: v1, client: reg, autoRegister: false });
  await assert.rejects(lookupOnly.prepare?.(ctx, env) ?? Promise.resolve(), (e: unknown) => e instanceof SchemaNotRegisteredError);
});

test('serialize before prepare and prepare without a registry URL are caller errors, not SerdeErrors', async () => {
  const serde = registryAvroSerde<string>({ schema: 'string' });
  assert.throws(() => serde.serialize('x', ctx), (e: unknown) => e instanceof SerdeNotPreparedError);
  await assert.rejects(serde.prepare?.(ctx, {}) ?? Promise.resolve(), (e: unknown) => e instanceof RegistryNotConfiguredError);
});

// Loopback only: connection refused and a registry that accepts but never answers.
test('an unreachable registry (connection refused) is REGISTRY_UNAVAILABLE after bounded retries', async () => {
  const serde = registryAvroSerde<string>({ schema: 'string', retry: fast });
  await assert.rejects(serde.prepare?.(ctx, { registryUrl: 'http://127.0.0.1:1' }) ?? Promise.resolve(), (e: unknown) => {
    assert.ok(e instanceof RegistryUnavailableError);
    assert.match(e.message, /ECONNREFUSED/);
    return true;
  });
});

test('a registry that never answers times out into REGISTRY_UNAVAILABLE', async () => {
  const sockets = new Set<import('node:net').Socket>();
  const server: Server = createServer(() => {});
  server.on('connection', (s) => sockets.add(s));
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  const { port } = server.address() as AddressInfo;
  try {
    const serde = registryAvroSerde<object>({ schema: v1, retry: { attempts: 2, initialDelayMs: 1 }, requestTimeoutMs: 100 });
    await serde.prepare?.(ctx, { registryUrl: `http://127.0.0.1:${port}` }).then(
      () => assert.fail('prepare should not succeed'),
      (e: unknown) => assert.ok(e instanceof RegistryUnavailableError, String(e)),
    );
  } finally {
    for (const s of sockets) s.destroy();
    await new Promise<void>((r) => server.close(() => r()));
  }
});
