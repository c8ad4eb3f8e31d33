import { test } from 'node:test';
import assert from 'node:assert/strict';
import { TopologyBuilder } from '../../src/dsl/topology-builder.ts';
import { compile } from '../../src/graph/index.ts';
import { jsonSerde, stringSerde } from '../../src/serdes/index.ts';
import type { Serde, SerdeContext } from '../../src/serdes/serde.ts';
import {
  ForeignKeyJoinRecordInvalidError,
  hashContext,
  responseSerde,
  subscriptionKeySerde,
  subscriptionSerde,
  valueHash,
  type Subscription,
} from '../../src/state/foreign-key-join.ts';

const ctx = { topic: 'app-join-subscription-repartition', role: 'value' as const };
const strings = stringSerde as Serde<unknown>;
const json = jsonSerde<unknown>() as Serde<unknown>;

test('subscriptions, responses and subscription store keys round-trip; an empty left key and a missing right row included', () => {
  const hash = valueHash(Buffer.from('{"customerId":"c1"}'));
  const subscriptions = subscriptionSerde(strings, { serde: json, ctx: hashContext('join') });
  for (const s of [{ instruction: 'propagate', hash, key: 'o1' }, { instruction: 'propagate-if-found', hash, key: '' }, { instruction: 'unsubscribe', hash: valueHash(null), key: 'o2' }] satisfies Subscription[]) {
    assert.deepEqual(subscriptions.deserialize(subscriptions.serialize(s, ctx), ctx), s);
  }
  const responses = responseSerde(json);
  for (const r of [{ hash, value: { name: 'Ann' } }, { hash, value: null }, { hash, value: 0 }]) assert.deepEqual(responses.deserialize(responses.serialize(r, ctx), ctx), r);
  const keys = subscriptionKeySerde(strings, strings);
  for (const k of [{ foreignKey: 'c1', key: 'o1' }, { foreignKey: '', key: 'o1' }, { foreignKey: 'c1', key: '' }]) assert.deepEqual(keys.deserialize(keys.serialize(k, ctx), ctx), k);
});

test('the hash tells values apart by their encoding; bytes that are no subscription or response fail with FK_JOIN_RECORD_INVALID', () => {
  assert.ok(valueHash(Buffer.from('a')).equals(valueHash(Buffer.from('a'))));
  assert.ok(!valueHash(Buffer.from('a')).equals(valueHash(Buffer.from('b'))));
  assert.equal(valueHash(Buffer.from('a')).length, 16);
  const subscriptions = subscriptionSerde(strings, { serde: json, ctx: hashContext('join') });
  for (const bytes of [null, Buffer.alloc(0), Buffer.of(7, ...Buffer.alloc(16)), Buffer.of(0, 1, 2)]) {
    assert.throws(() => subscriptions.deserialize(bytes, ctx), (e: unknown) => e instanceof ForeignKeyJoinRecordInvalidError && e.code === 'FK_JOIN_RECORD_INVALID' && e.topic === ctx.topic);
  }
  assert.throws(() => responseSerde(json).deserialize(Buffer.of(2, ...Buffer.alloc(16)), ctx), ForeignKeyJoinRecordInvalidError);
  assert.throws(() => subscriptionKeySerde(strings, strings).deserialize(Buffer.of(0, 0, 0, 9, 1), ctx), ForeignKeyJoinRecordInvalidError);
});

test("a serde with start-up work (a registry serde) is prepared where the join uses it: the left value in the join's hash context, the keys and right values on the join's topics", async () => {
  const prepared: string[] = [];
  const preparing = <T>(serde: Serde<T>, name: string): Serde<T> => ({ ...serde, name, prepare: async (c: SerdeContext) => void prepared.push(`${name} ${c.topic} ${c.role}`) });
  const app = new TopologyBuilder({ appId: 'app' });
  const orders = app.table('orders', { key: preparing(stringSerde, 'order-key'), value: preparing(jsonSerde<{ customerId: string }>(), 'order') });
  const customers = app.table('customers', { key: preparing(stringSerde, 'customer-key'), value: preparing(jsonSerde<{ name: string }>(), 'customer') });
  orders.join(customers, (o) => o.customerId, (_k, _o, c) => c.name, { name: 'join' }).toStream().to('out', { value: stringSerde });
  for (const { serde, ctx: c } of compile(app).serdeUsages()) await serde.prepare?.(c, {});
  for (const want of ['order join-fk-join-hash-pseudo-topic value', 'order-key app-join-subscription-repartition value', 'customer-key app-join-subscription-repartition key', 'customer app-join-response-repartition value', 'order-key app-join-response-repartition key']) {
    assert.ok(prepared.includes(want), `${want} in ${prepared.join(', ')}`);
  }
});
