import assert from 'node:assert/strict';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { test } from 'node:test';
import { lineEncoder, printedJson, ProduceInputError, RecordDecoder } from '../../src/cli/record-format.ts';
import { fileURLToPath } from 'node:url';
import { formatOfSchemaFile } from '../../src/cli/registry-formats.ts';
import { describeTopology } from '../../src/cli/describe.ts';
import { loadTopology } from '../../src/dsl/load.ts';
import { compile } from '../../src/graph/compile.ts';
import { testCluster, uniqueName } from '../support/cluster.ts';

const incoming = (key: Buffer | null, value: Buffer | null) => ({ topic: 't', partition: 0, offset: 3, key, value, timestamp: 0, headers: [] });
const schemaDir = () => mkdtempSync(join(tmpdir(), 'onceflow-schemas-'));

test('the --schema extension picks the registry format; a registry format without --schema is refused', async () => {
  assert.deepEqual(['v.avsc', 'v.proto', 'v.json', 'v.txt'].map(formatOfSchemaFile), ['avro', 'protobuf', 'json-schema', undefined]);
  await assert.rejects(lineEncoder({ topic: 't', format: 'protobuf' }), (e: unknown) => e instanceof ProduceInputError && /--format protobuf needs --schema/.test(e.message));
});

test('registry Protobuf and JSON Schema written by produce are read back by consume\'s decoder; a bad line names its number', async () => {
  const { registryUrl } = testCluster();
  const dir = schemaDir();
  const proto = join(dir, 'payment.proto');
  writeFileSync(proto, 'syntax = "proto3";\npackage shop;\nmessage Header { string trace = 1; }\nmessage Payment { string id = 1; int64 cents = 2; Kind kind = 3; }\nenum Kind { CARD = 0; BANK = 1; }\n');
  const protoTopic = uniqueName('pb-produce');
  const encodeProto = await lineEncoder({ topic: protoTopic, format: 'protobuf', schema: proto, messageName: 'Payment', registryUrl, keyField: 'id' });
  const record = encodeProto('{"id":"p-1","cents":"9007199254740993","kind":"BANK"}', 1);
  assert.deepEqual([record.value?.[0], ...record.value!.subarray(5, 7)], [0, 2, 2], 'wire format, message index [1]');
  const decoder = new RecordDecoder(registryUrl);
  const printed = JSON.parse(printedJson(await decoder.print(incoming(record.key ?? null, record.value ?? null), false))) as { key: string; value: unknown };
  assert.deepEqual([printed.key, printed.value], ['p-1', { id: 'p-1', cents: '9007199254740993', kind: 'BANK' }]);
  assert.throws(() => encodeProto('{"id":"p-2","cents":"lots"}', 2), (e: unknown) => e instanceof ProduceInputError && /line 2: .*cents: int64 expected/.test(e.message));

  const jsonSchema = join(dir, 'refund.json');
  writeFileSync(jsonSchema, JSON.stringify({ type: 'object', properties: { id: { type: 'string' }, cents: { type: 'integer' } }, required: ['id'] }));
  const encodeJson = await lineEncoder({ topic: uniqueName('json-produce'), format: 'json-schema', schema: jsonSchema, registryUrl });
  const refund = encodeJson('{"id":"r-1","cents":5}', 1);
  assert.equal(refund.value?.[0], 0);
  assert.deepEqual(await decoder.decode(refund.value ?? null), { id: 'r-1', cents: 5 });
  assert.throws(() => encodeJson('{"cents":5}', 4), (e: unknown) => e instanceof ProduceInputError && /line 4: .*required property 'id'/.test(e.message));
});

test('describe --json names a registry Protobuf serde with its message', async () => {
  const compiled = compile(await loadTopology(fileURLToPath(new URL('../fixtures/protobuf-payments.ts', import.meta.url))));
  assert.match(describeTopology(compiled, 'json'), /"valueSerde":\s*"registry-protobuf:onceflow\.it\.Payment"/);
});
