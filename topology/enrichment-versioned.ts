import { TopologyBuilder } from '../src/dsl/topology-builder.ts';
import { jsonSerde, stringSerde } from '../src/serdes/index.ts';
import { sumPerSegment } from './enrichment.ts';
import { asCustomer, asOrder, enrich, isCustomerEvent, isOrderEvent, type Customer, type EnrichedOrder, type EnrichmentEvent, type EnrichmentOrder } from '../processors/enrichment.ts';

export interface EnrichmentVersionedOptions {
  readonly input?: string;
  readonly output?: string;
  readonly appId?: string;
}

export const ENRICHMENT_VERSIONED_DEFAULTS = { input: 'timed-customer-events', output: 'segment-totals-as-of', appId: 'enrichment-versioned' } as const;

/** How far behind stream time the customers table keeps its versions (and joins an order at all). */
export const CUSTOMER_HISTORY_RETENTION_MS = 2_000;

/** How long, in stream time, an order waits for customer updates older than it that arrive after it. */
export const ORDER_GRACE_MS = 500;

/** An event of topology/enrichment-events.ts that says when it happened: its event time, not its arrival. */
export type TimedEnrichmentEvent = EnrichmentEvent & { readonly at: number };

/**
 * topology/enrichment-events.ts with event time and a versioned customers table: events arrive a
 * little out of order, each order waits out a grace period (KIP-923) and then joins the customer row
 * valid at the order's own time `at` (KIP-914), not the last one to arrive. The chaos harness's model
 * (src/verify/versioned-enrichment.ts) recomputes it.
 */
export function enrichmentVersionedTopology(opts: EnrichmentVersionedOptions = {}): TopologyBuilder {
  const o = { ...ENRICHMENT_VERSIONED_DEFAULTS, ...opts };
  const app = new TopologyBuilder({ appId: o.appId });
  const events = app.stream(o.input, { key: stringSerde, value: jsonSerde<TimedEnrichmentEvent>(), timestamp: (_customerId, event) => event.at });
  const { customer, order } = events.branch({ customer: isCustomerEvent, order: isOrderEvent });
  const customers = customer
    .mapValues(asCustomer, { value: jsonSerde<Customer>() })
    .toTable({ name: 'customers', store: 'customers', versioned: { historyRetentionMs: CUSTOMER_HISTORY_RETENTION_MS } });
  const enriched = order.mapValues(asOrder, { value: jsonSerde<EnrichmentOrder>() }).join(customers, enrich, { name: 'enrich', value: jsonSerde<EnrichedOrder>(), graceMs: ORDER_GRACE_MS });
  sumPerSegment(enriched, o.output);
  return app;
}

/** Topic names may come from the environment so that replicas, tests and the chaos harness use their own. */
export default enrichmentVersionedTopology({
  ...(process.env.ONCEFLOW_ENRICH_VERSIONED_INPUT ? { input: process.env.ONCEFLOW_ENRICH_VERSIONED_INPUT } : {}),
  ...(process.env.ONCEFLOW_ENRICH_VERSIONED_OUTPUT ? { output: process.env.ONCEFLOW_ENRICH_VERSIONED_OUTPUT } : {}),
});
