import type { Order } from '../../processors/orders.ts';
import { orderSerde } from '../../topology/orders.ts';
import type { IncomingRecord } from '../core/records.ts';
import type { InputRecord } from './orders-input.ts';
import type { ExpectationModel } from './verify.ts';

/**
 * The orders input in registry Avro (topology/order.avsc, Confluent wire format), for running the
 * chaos harness and the demo against `ONCEFLOW_ORDERS_FORMAT=avro`. Poison records stay the raw
 * malformed bytes they are: not wire format, so the worker must dead-letter them.
 */
export interface AvroOrders {
  encode(records: readonly InputRecord[]): InputRecord<string | Buffer>[];
  /** The same expectations, computed from the decoded orders: the model never sees Avro. */
  decoded(model: ExpectationModel): ExpectationModel;
}

export async function avroOrders(topic: string, registryUrl: string): Promise<AvroOrders> {
  const serde = orderSerde('avro');
  const ctx = { topic, role: 'value' } as const;
  await serde.prepare?.(ctx, { registryUrl });
  const asOrder = (value: string): Order | undefined => {
    try {
      const o = JSON.parse(value) as Order;
      return typeof o?.eventId === 'string' ? o : undefined;
    } catch {
      return undefined;
    }
  };
  const toJson = (r: IncomingRecord): IncomingRecord => {
    try {
      return { ...r, value: Buffer.from(JSON.stringify(serde.deserialize(r.value, ctx))) };
    } catch {
      return r; // not decodable: the model sees the poison it is
    }
  };
  return {
    encode: (records) =>
      records.map((r) => {
        const order = asOrder(r.value);
        return order ? { key: r.key, value: serde.serialize(order, ctx) ?? Buffer.alloc(0) } : r;
      }),
    decoded: (model) => ({
      ...model,
      name: `${model.name} (input decoded from registry Avro)`,
      expectedProducers: (inputs) => model.expectedProducers(inputs.map(toJson)),
      ...(model.expectedFinal ? { expectedFinal: (inputs: readonly IncomingRecord[]) => model.expectedFinal!(inputs.map(toJson)) } : {}),
    }),
  };
}
