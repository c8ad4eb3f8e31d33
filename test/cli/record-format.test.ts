import assert from 'node:assert/strict';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { test } from 'node:test';
import { lineEncoder, printedJson, ProduceInputError, RecordDecoder } from '../../src/cli/record-format.ts';
import { resolveConfigSources } from '../../src/cli/config-sources.ts';
import { testCluster, uniqueName } from '../support/cluster.ts';

const incoming = (key: Buffer | null, value: Buffer | null) => ({ topic: 't', partition: 0, offset: 7, key, value, timestamp: 0, headers: [{ key: 'h', value: Buffer.from('v') }] });

test('produce lines become records: JSON values keyed by a field, text, keyed envelopes with headers; a bad line names its number', async () => {
  const json = await lineEncoder({ topic: 't', format: 'json', keyField: 'id' });
  const r = json('{"id":"a","n":1}', 1);
  assert.equal(r.key?.toString(), 'a');
  assert.deepEqual(JSON.parse(r.value!.toString()), { id: 'a', n: 1 });
  assert.equal((await lineEncoder({ topic: 't', format: 'text' }))('the cat', 1).value?.toString(), 'the cat');
  const keyed = (await lineEncoder({ topic: 't', format: 'text', keyed: true }))('{"key":"k","value":"v","headers":{"trace":"x"}}', 1);
  assert.deepEqual([keyed.key?.toString(), keyed.value?.toString(), keyed.headers?.map((h) => `${h.key}=${h.value.toString()}`)], ['k', 'v', ['trace=x']]);
  assert.throws(() => json('{"n":1}', 3), (e: unknown) => e instanceof ProduceInputError && /line 3: no field "id"/.test(e.message));
  assert.throws(() => json('{nope', 4), (e: unknown) => e instanceof ProduceInputError && e.code === 'PRODUCE_INPUT_INVALID' && /line 4: not JSON/.test(e.message));
});

test('registry Avro written by produce is read back by consume\'s decoder; JSON, text and bytes are told apart', async () => {
  const { registryUrl } = testCluster();
  const topic = uniqueName('avro-produce');
  const schema = join(mkdtempSync(join(tmpdir(), 'onceflow-avsc-')), 'order.avsc');
  writeFileSync(schema, JSON.stringify({ type: 'record', name: 'Order', fields: [{ name: 'id', type: 'string' }, { name: 'amount', type: 'double' }] }));
  const encode = await lineEncoder({ topic, format: 'avro', schema, registryUrl, keyField: 'id' });
  const record = encode('{"id":"o-1","amount":12.5}', 1);
  assert.equal(record.value?.[0], 0, 'Confluent wire format');
  const decoder = new RecordDecoder(registryUrl);
  const printed = await decoder.print(incoming(record.key ?? null, record.value ?? null), true);
  assert.deepEqual(JSON.parse(printedJson(printed)), { partition: 0, offset: 7, timestamp: '1970-01-01T00:00:00.000Z', key: 'o-1', value: { id: 'o-1', amount: 12.5 }, headers: { h: 'v' } });
  assert.deepEqual(await decoder.decode(Buffer.from('{"a":1}')), { a: 1 });
  assert.equal(await decoder.decode(Buffer.from('plain words')), 'plain words');
  assert.deepEqual(await decoder.decode(Buffer.from([0xff, 0xfe, 0x00])), { base64: '//4A' });
});

test('the dev cluster\'s connection fills bootstrap and registry only where no other source does', () => {
  const dev = { bootstrap: 'dev:1', registryUrl: 'http://dev:2' };
  const { input, origin } = resolveConfigSources({ env: {}, devCluster: dev });
  assert.deepEqual([input.bootstrap, input.registryUrl, origin.bootstrap], ['dev:1', 'http://dev:2', 'dev']);
  const flagged = resolveConfigSources({ env: { ONCEFLOW_REGISTRY_URL: 'http://env:3' }, flags: { bootstrap: 'flag:1' }, devCluster: dev });
  assert.deepEqual([flagged.input.bootstrap, flagged.origin.bootstrap, flagged.input.registryUrl, flagged.origin.registryUrl], ['flag:1', 'flag', 'http://env:3', 'env']);
});
