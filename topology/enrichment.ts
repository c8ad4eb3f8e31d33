import { TopologyBuilder } from '../src/dsl/topology-builder.ts';
import type { Stream } from '../src/dsl/stream.ts';
import { jsonSerde, stringSerde } from '../src/serdes/index.ts';
import { addAmount, customerIdOf, enrich, segmentOf, type Customer, type EnrichedOrder, type EnrichmentOrder } from '../processors/enrichment.ts';

export interface EnrichmentOptions {
  readonly orders?: string;
  readonly customers?: string;
  /** Every order with its customer's segment. */
  readonly enriched?: string;
  /** The running total per segment. */
  readonly totals?: string;
  readonly appId?: string;
}

export const ENRICHMENT_DEFAULTS = { orders: 'orders', customers: 'customers', enriched: 'enriched-orders', totals: 'segment-totals', appId: 'enrichment' } as const;

/**
 * Orders (keyed by order id) re-keyed by customer, which repartitions them to the customers table's
 * partition count, joined with the customer row as of each order, and summed per customer segment.
 */
export function enrichmentTopology(opts: EnrichmentOptions = {}): TopologyBuilder {
  const o = { ...ENRICHMENT_DEFAULTS, ...opts };
  const app = new TopologyBuilder({ appId: o.appId });
  const customers = app.table(o.customers, { key: stringSerde, value: jsonSerde<Customer>(), store: 'customers' });
  const enriched = app
    .stream(o.orders, { key: stringSerde, value: jsonSerde<EnrichmentOrder>() })
    .selectKey(customerIdOf, { key: stringSerde })
    .join(customers, enrich, { name: 'enrich', value: jsonSerde<EnrichedOrder>() });
  enriched.to(o.enriched);
  sumPerSegment(enriched, o.totals);
  return app;
}

/** The running total of the joined orders' amounts per customer segment, written to `topic`. */
export function sumPerSegment(enriched: Stream<string | null, EnrichedOrder>, topic: string): void {
  enriched
    .groupBy(segmentOf, { key: stringSerde })
    .aggregate(() => 0, addAmount, { state: jsonSerde<number>(), name: 'segment-totals' })
    .toStream()
    .to(topic, { value: jsonSerde<number>() });
}

/** Topic names may come from the environment so that replicas, tests and the chaos harness use their own. */
export default enrichmentTopology({
  ...(process.env.ONCEFLOW_ENRICH_ORDERS ? { orders: process.env.ONCEFLOW_ENRICH_ORDERS } : {}),
  ...(process.env.ONCEFLOW_ENRICH_CUSTOMERS ? { customers: process.env.ONCEFLOW_ENRICH_CUSTOMERS } : {}),
  ...(process.env.ONCEFLOW_ENRICH_ENRICHED ? { enriched: process.env.ONCEFLOW_ENRICH_ENRICHED } : {}),
  ...(process.env.ONCEFLOW_ENRICH_TOTALS ? { totals: process.env.ONCEFLOW_ENRICH_TOTALS } : {}),
});
