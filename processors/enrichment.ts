// Stage functions of topology/enrichment.ts: orders joined with the customer they belong to, then
// summed per customer segment.

export interface Customer {
  readonly customerId: string;
  readonly name: string;
  readonly segment: string;
  /** Increases with every update of the customer. */
  readonly version: number;
}

export interface EnrichmentOrder {
  readonly orderId: string;
  readonly customerId: string;
  readonly amount: number;
}

export interface EnrichedOrder extends EnrichmentOrder {
  readonly segment: string;
  /** The version of the customer row the order was joined with. */
  readonly customerVersion: number;
}

export function customerIdOf(_orderId: string | null, order: EnrichmentOrder): string {
  return order.customerId;
}

/** The joiner: key first, then the order, then the customer row as of the order's processing. */
export function enrich(_customerId: string | null, order: EnrichmentOrder, customer: Customer): EnrichedOrder {
  return { ...order, segment: customer.segment, customerVersion: customer.version };
}

export function segmentOf(_customerId: string | null, order: EnrichedOrder): string {
  return order.segment;
}

export function addAmount(_segment: string | null, order: EnrichedOrder, total: number): number {
  return total + order.amount;
}

/** One topic carrying both, keyed by customer id: a customer update or an order, in the order they happened. */
export type EnrichmentEvent = ({ readonly type: 'customer' } & Customer) | ({ readonly type: 'order' } & EnrichmentOrder);

export function isCustomerEvent(_customerId: string | null, event: EnrichmentEvent): boolean {
  return event.type === 'customer';
}

export function isOrderEvent(_customerId: string | null, event: EnrichmentEvent): boolean {
  return event.type === 'order';
}

export function asCustomer(event: EnrichmentEvent): Customer {
  return event as Customer;
}

export function asOrder(event: EnrichmentEvent): EnrichmentOrder {
  return event as EnrichmentOrder;
}
