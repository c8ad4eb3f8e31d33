import { test } from 'node:test';
import assert from 'node:assert/strict';
import { TopologyBuilder } from '../../../src/dsl/topology-builder.ts';
import { compile } from '../../../src/graph/index.ts';
import { jsonSerde, stringSerde } from '../../../src/serdes/index.ts';
import type { Serde } from '../../../src/serdes/serde.ts';
import { createTask } from '../../../src/runtime/task/task.ts';

function tableTask(value: Serde<unknown> = jsonSerde<unknown>()) {
  const app = new TopologyBuilder({ appId: 'r' });
  app.table('customers', { key: stringSerde, value, store: 'customers' }).toStream().to('out', { value: jsonSerde({ nullable: true }) });
  app.stream('events', { key: stringSerde, value: stringSerde }).toTable({ store: 'events', value: stringSerde });
  const compiled = compile(app);
  return { checkRestored: (store: string, key: Buffer, value: Buffer | null) => createTask(compiled, compiled.stores.get(store)!.subtopology, 0).checkRestored(store, key, value) };
}

test("a record of a table's source topic its serdes refuse is not restored; a good one and a tombstone are", () => {
  const task = tableTask();
  const refused = task.checkRestored('customers', Buffer.from('c1'), Buffer.from('{not json'));
  assert.ok(refused !== undefined && !(refused instanceof Promise));
  assert.equal(refused.code, 'JSON_INVALID');
  assert.equal(task.checkRestored('customers', Buffer.from('c1'), Buffer.from('{"name":"ann"}')), undefined);
  assert.equal(task.checkRestored('customers', Buffer.from('c1'), null), undefined, 'a tombstone is not decoded');
});

test("a store with a changelog of its own restores what its stage wrote, unchecked", () => {
  assert.equal(tableTask().checkRestored('events', Buffer.from('e1'), Buffer.from('anything')), undefined);
});

test('a serde that must fetch a schema first is awaited before the record is judged', async () => {
  let resolved = false;
  const fetching: Serde<unknown> = {
    name: 'fetching',
    serialize: (v) => Buffer.from(String(v)),
    deserialize: (data) => {
      if (!resolved) throw new Error('schema not fetched');
      if (data?.toString() === 'bad') throw Object.assign(new Error('unknown schema'), { code: 'SCHEMA_UNKNOWN' });
      return data?.toString();
    },
    resolve: () => (resolved ? null : Promise.resolve().then(() => void (resolved = true))),
  };
  const task = tableTask(fetching);
  const first = task.checkRestored('customers', Buffer.from('c1'), Buffer.from('good'));
  assert.ok(first instanceof Promise);
  assert.equal(await first, undefined);
  assert.equal((task.checkRestored('customers', Buffer.from('c1'), Buffer.from('bad')) as { code: string }).code, 'DESERIALIZATION_FAILED', 'a plain error (no OnceflowError code) gets the generic code');
});
