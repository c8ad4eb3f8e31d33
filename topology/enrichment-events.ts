import { TopologyBuilder } from '../src/dsl/topology-builder.ts';
import { jsonSerde, stringSerde } from '../src/serdes/index.ts';
import { sumPerSegment } from './enrichment.ts';
import { asCustomer, asOrder, enrich, isCustomerEvent, isOrderEvent, type Customer, type EnrichedOrder, type EnrichmentEvent, type EnrichmentOrder } from '../processors/enrichment.ts';

export interface EnrichmentEventsOptions {
  readonly input?: string;
  readonly output?: string;
  readonly appId?: string;
}

export const ENRICHMENT_EVENTS_DEFAULTS = { input: 'customer-events', output: 'segment-totals', appId: 'enrichment-events' } as const;

/**
 * The enrichment of topology/enrichment.ts with customer updates and orders in one topic keyed by
 * customer: each order joins the customer row that the updates before it in its partition left,
 * which is what the chaos harness's model recomputes. Customer updates become a table (a store
 * changelogged to `<appId>-customers-changelog`), orders join it and are summed per segment.
 */
export function enrichmentEventsTopology(opts: EnrichmentEventsOptions = {}): TopologyBuilder {
  const o = { ...ENRICHMENT_EVENTS_DEFAULTS, ...opts };
  const app = new TopologyBuilder({ appId: o.appId });
  const events = app.stream(o.input, { key: stringSerde, value: jsonSerde<EnrichmentEvent>() });
  const { customer, order } = events.branch({ customer: isCustomerEvent, order: isOrderEvent });
  const customers = customer.mapValues(asCustomer, { value: jsonSerde<Customer>() }).toTable({ name: 'customers', store: 'customers' });
  const enriched = order.mapValues(asOrder, { value: jsonSerde<EnrichmentOrder>() }).join(customers, enrich, { name: 'enrich', value: jsonSerde<EnrichedOrder>() });
  sumPerSegment(enriched, o.output);
  return app;
}

/** Topic names may come from the environment so that replicas, tests and the chaos harness use their own. */
export default enrichmentEventsTopology({
  ...(process.env.ONCEFLOW_ENRICH_EVENTS_INPUT ? { input: process.env.ONCEFLOW_ENRICH_EVENTS_INPUT } : {}),
  ...(process.env.ONCEFLOW_ENRICH_EVENTS_OUTPUT ? { output: process.env.ONCEFLOW_ENRICH_EVENTS_OUTPUT } : {}),
});
