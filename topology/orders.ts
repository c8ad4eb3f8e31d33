import { TopologyBuilder } from '../src/dsl/topology-builder.ts';
import { jsonSerde, registryAvroSerde, stringSerde, type Serde } from '../src/serdes/index.ts';
import { applyOrder, emptyCustomerPaid, eventIdOf, versionOf, type CustomerPaid, type Order } from '../processors/orders.ts';

export interface OrdersTopologyOptions {
  readonly input?: string;
  readonly output?: string;
  readonly appId?: string;
  /** How long an event id is remembered for dedupe (stream time). */
  readonly dedupeTtlMs?: number;
  /** `avro`: order events in the Confluent wire format, schema topology/order.avsc registered in the schema registry. */
  readonly format?: 'json' | 'avro';
}

/** The value serde of the order events: the only thing that changes between JSON and registry Avro. */
export function orderSerde(format: 'json' | 'avro'): Serde<Order> {
  return format === 'avro' ? registryAvroSerde<Order>({ schema: new URL('./order.avsc', import.meta.url) }) : jsonSerde<Order>();
}

export const ORDERS_DEFAULTS = { input: 'orders', output: 'customer-paid-totals', appId: 'orders', dedupeTtlMs: 3_600_000 } as const;

/**
 * Paid total per customer from order events.
 *  1. dedupe by eventId (a redelivered event is dropped while its id is remembered),
 *  2. key by orderId and keep only versions newer than the last one seen (an out-of-order older
 *     event does not overwrite a newer status),
 *  3. per customer, keep the paid amount of each order and emit the total.
 * Each order counts once, with its latest amount, and only while its latest status is PAID. An
 * order is assumed to keep its customer (a move would leave it counted for the old one).
 */
export function ordersTopology(opts: OrdersTopologyOptions = {}): TopologyBuilder {
  const o = { ...ORDERS_DEFAULTS, ...opts };
  const app = new TopologyBuilder({ appId: o.appId });
  app
    .stream(o.input, { key: stringSerde, value: orderSerde(o.format ?? 'json') })
    .dedupe(eventIdOf, { ttlMs: o.dedupeTtlMs, name: 'order-events-seen' })
    .selectKey((_key, order) => order.orderId, { key: stringSerde })
    .latestByVersion(versionOf, { name: 'order-versions' })
    .groupBy((_orderId, order) => order.customerId, { key: stringSerde })
    .aggregate(emptyCustomerPaid, applyOrder, { state: jsonSerde<CustomerPaid>(), name: 'customer-paid' })
    .toStream()
    .mapValues((state) => state.total)
    .to(o.output, { key: stringSerde, value: jsonSerde<number>() });
  return app;
}

/** Topic names may come from the environment so that replicas, tests and the chaos harness use their own. */
export default ordersTopology({
  ...(process.env.ONCEFLOW_ORDERS_INPUT ? { input: process.env.ONCEFLOW_ORDERS_INPUT } : {}),
  ...(process.env.ONCEFLOW_ORDERS_OUTPUT ? { output: process.env.ONCEFLOW_ORDERS_OUTPUT } : {}),
  ...(process.env.ONCEFLOW_ORDERS_FORMAT === 'avro' ? { format: 'avro' as const } : {}),
});
