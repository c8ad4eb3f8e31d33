import { TopologyBuilder } from '../../src/dsl/topology-builder.ts';
import { jsonSerde, stringSerde } from '../../src/serdes/index.ts';
import type { Order } from '../../processors/orders.ts';

export const CUSTOMER_SUM_DEFAULTS = { input: 'orders', output: 'customer-sums', appId: 'customer-sum' } as const;

/**
 * The plain per-key aggregate: keep PAID events, re-key by customer (a repartition), sum the amounts.
 * No dedupe or version guard, so every PAID event counts. The Kafka Streams peer (customerSum) does the same.
 */
export function customerSumTopology(opts: { input?: string; output?: string; appId?: string } = {}): TopologyBuilder {
  const o = { ...CUSTOMER_SUM_DEFAULTS, ...opts };
  const app = new TopologyBuilder({ appId: o.appId });
  app
    .stream(o.input, { key: stringSerde, value: jsonSerde<Order>() })
    .filter((_key, order) => order.status === 'PAID')
    .groupBy((_key, order) => order.customerId, { key: stringSerde })
    .aggregate(() => 0, (_customer, order, total: number) => total + order.amount, { state: jsonSerde<number>(), name: 'customer-sum' })
    .toStream()
    .to(o.output, { key: stringSerde, value: jsonSerde<number>() });
  return app;
}

export default customerSumTopology({
  input: process.env.ONCEFLOW_BENCH_INPUT ?? CUSTOMER_SUM_DEFAULTS.input,
  output: process.env.ONCEFLOW_BENCH_OUTPUT ?? CUSTOMER_SUM_DEFAULTS.output,
});
