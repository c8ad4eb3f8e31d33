import { TopologyBuilder } from '../../src/dsl/topology-builder.ts';
import { jsonSerde, stringSerde } from '../../src/serdes/index.ts';
import type { Order } from '../../processors/orders.ts';

export interface FilterMapOptions {
  readonly input?: string;
  readonly output?: string;
  readonly appId?: string;
}

export const FILTER_MAP_DEFAULTS = { input: 'orders', output: 'orders-priced', appId: 'filter-map' } as const;

export type PricedOrder = Order & { readonly amountCents: number };

/**
 * The stateless benchmark pipeline: drop cancelled orders, add the amount in cents. No state and no
 * repartition, so its cost over the copy loop is (de)serialization, the stages and the transaction.
 * The Kafka Streams peer (bench/peers/kafka-streams, filterMap) does the same.
 */
export function filterMapTopology(opts: FilterMapOptions = {}): TopologyBuilder {
  const o = { ...FILTER_MAP_DEFAULTS, ...opts };
  const app = new TopologyBuilder({ appId: o.appId });
  app
    .stream(o.input, { key: stringSerde, value: jsonSerde<Order>() })
    .filter((_key, order) => order.status !== 'CANCELLED')
    .mapValues((order): PricedOrder => ({ ...order, amountCents: order.amount * 100 }), { value: jsonSerde<PricedOrder>() })
    .to(o.output, { key: stringSerde, value: jsonSerde<PricedOrder>() });
  return app;
}

export default filterMapTopology({
  input: process.env.ONCEFLOW_FILTER_MAP_INPUT ?? FILTER_MAP_DEFAULTS.input,
  output: process.env.ONCEFLOW_FILTER_MAP_OUTPUT ?? FILTER_MAP_DEFAULTS.output,
});
