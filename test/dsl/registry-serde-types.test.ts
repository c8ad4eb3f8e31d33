import { test } from 'node:test';
import assert from 'node:assert/strict';
import { TopologyBuilder } from '../../src/dsl/topology-builder.ts';
import type { Stream } from '../../src/dsl/stream.ts';
import { registryJsonSchemaSerde, registryProtobufSerde, stringSerde } from '../../src/serdes/index.ts';

interface Payment {
  readonly id: string;
  readonly cents: bigint;
}
interface Refund {
  readonly paymentId: string;
  readonly reason: string;
}

const proto = 'syntax = "proto3"; message Payment { string id = 1; int64 cents = 2; }';
const refundSchema = { type: 'object', properties: { paymentId: { type: 'string' }, reason: { type: 'string' } }, required: ['paymentId', 'reason'] };

test('the declared types of the Protobuf and JSON Schema registry serdes flow through the DSL', () => {
  const app = new TopologyBuilder({ appId: 'registry-types' });
  const payments = app.stream('payments', { key: stringSerde, value: registryProtobufSerde<Payment>({ schema: proto }) });
  const refunds = app.stream('refunds', { key: stringSerde, value: registryJsonSchemaSerde<Refund>({ schema: refundSchema }) });
  const cents: Stream<string | null, bigint> = payments.mapValues((p) => p.cents);
  const reasons: Stream<string | null, string> = refunds.mapValues((r) => r.reason);
  refunds.to('refunds-copy', { value: registryJsonSchemaSerde<Refund>({ schema: refundSchema }) });
  // never called: these lines exist for the type checker only
  const typeErrors = () => {
    // @ts-expect-error the Protobuf serde's type has no such field
    payments.mapValues((p) => p.amount);
    // @ts-expect-error a stream of payments cannot be written with a refund serde
    payments.to('wrong', { value: registryJsonSchemaSerde<Refund>({ schema: refundSchema }) });
  };
  void typeErrors;
  void cents;
  void reasons;
  assert.deepEqual(
    app.nodes.flatMap((n) => (n.spec.kind === 'source' ? [n.valueSerde?.name] : [])),
    ['registry-protobuf:Payment', 'registry-json-schema:JSON Schema'],
  );
});
