import { TopologyBuilder } from '../src/dsl/topology-builder.ts';
import { jsonSerde, stringSerde } from '../src/serdes/index.ts';

/** A row of the customers table (keyed by customer id); a tombstone deletes the customer. */
export interface SegmentCustomer {
  readonly segment: string;
  readonly balance: number;
}

export interface CustomerSegmentsOptions {
  readonly customers?: string;
  /** The number of current customers per segment. */
  readonly counts?: string;
  /** The sum of the current customers' balances per segment. */
  readonly balances?: string;
  readonly appId?: string;
}

export const CUSTOMER_SEGMENTS_DEFAULTS = { customers: 'customers', counts: 'segment-counts', balances: 'segment-balances', appId: 'customer-segments' } as const;

/**
 * Current customers per segment: the customers table re-grouped by segment, counted and summed. A
 * customer who moves segment leaves the old segment's count and sum and joins the new one's; a
 * deleted customer leaves its segment.
 */
export function customerSegmentsTopology(opts: CustomerSegmentsOptions = {}): TopologyBuilder {
  const o = { ...CUSTOMER_SEGMENTS_DEFAULTS, ...opts };
  const app = new TopologyBuilder({ appId: o.appId });
  const bySegment = app
    .table(o.customers, { key: stringSerde, value: jsonSerde<SegmentCustomer>(), store: 'customers' })
    .groupBy((_id, c) => [c.segment, c.balance], { key: stringSerde, value: jsonSerde<number>(), name: 'by-segment' });
  bySegment.count({ name: 'segment-counts' }).toStream().to(o.counts, { value: jsonSerde<number>() });
  bySegment
    .aggregate(
      () => 0,
      (_segment, balance, sum) => sum + balance,
      (_segment, balance, sum) => sum - balance,
      { state: jsonSerde<number>(), name: 'segment-balances' },
    )
    .toStream()
    .to(o.balances, { value: jsonSerde<number>() });
  return app;
}

/** Topic names may come from the environment so that replicas and tests use their own. */
export default customerSegmentsTopology({
  ...(process.env.ONCEFLOW_SEGMENTS_CUSTOMERS ? { customers: process.env.ONCEFLOW_SEGMENTS_CUSTOMERS } : {}),
  ...(process.env.ONCEFLOW_SEGMENTS_COUNTS ? { counts: process.env.ONCEFLOW_SEGMENTS_COUNTS } : {}),
  ...(process.env.ONCEFLOW_SEGMENTS_BALANCES ? { balances: process.env.ONCEFLOW_SEGMENTS_BALANCES } : {}),
});
