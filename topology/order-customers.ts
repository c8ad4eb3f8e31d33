import { TopologyBuilder } from '../src/dsl/topology-builder.ts';
import { jsonSerde, stringSerde } from '../src/serdes/index.ts';

/** A row of the orders table, keyed by order id; a tombstone deletes the order. */
export interface CustomerOrder {
  readonly customerId: string;
  readonly amount: number;
}

/** A row of the customers table, keyed by customer id. */
export interface OrderCustomer {
  readonly name: string;
  readonly tier: string;
}

/** An order with its customer's current name and tier (null ones in the left join's output: no such customer). */
export interface EnrichedOrder {
  readonly orderId: string;
  readonly customerId: string;
  readonly amount: number;
  readonly customer: string | null;
  readonly tier: string | null;
}

export interface OrderCustomersOptions {
  readonly orders?: string;
  readonly customers?: string;
  /** The inner join: orders whose customer exists. */
  readonly enriched?: string;
  /** The left join: every order, with null customer fields when the customer does not exist. */
  readonly all?: string;
  readonly appId?: string;
}

export const ORDER_CUSTOMERS_DEFAULTS = { orders: 'orders', customers: 'customers', enriched: 'enriched-orders', all: 'all-orders', appId: 'order-customers' } as const;

export function enrich(orderId: string, order: CustomerOrder, customer: OrderCustomer | null): EnrichedOrder {
  return { orderId, customerId: order.customerId, amount: order.amount, customer: customer?.name ?? null, tier: customer?.tier ?? null };
}

/**
 * Orders keyed by order id enriched with the customer of their `customerId`: a foreign-key table
 * join. An order moved to another customer takes the new customer's row; a customer's update reaches
 * all of its orders; a deleted order or (inner join) customer deletes the enriched row.
 */
export function orderCustomersTopology(opts: OrderCustomersOptions = {}): TopologyBuilder {
  const o = { ...ORDER_CUSTOMERS_DEFAULTS, ...opts };
  const app = new TopologyBuilder({ appId: o.appId });
  const orders = app.table(o.orders, { key: stringSerde, value: jsonSerde<CustomerOrder>(), store: 'orders' });
  const customers = app.table(o.customers, { key: stringSerde, value: jsonSerde<OrderCustomer>(), store: 'customers' });
  const enrichedOut = jsonSerde<EnrichedOrder>({ nullable: true });
  orders
    .join(customers, (order) => order.customerId, (id, order, customer) => enrich(String(id), order, customer), { name: 'enriched' })
    .toStream()
    .to(o.enriched, { value: enrichedOut });
  orders
    .leftJoin(customers, (order) => order.customerId, (id, order, customer) => enrich(String(id), order, customer), { name: 'all' })
    .toStream()
    .to(o.all, { value: enrichedOut });
  return app;
}

/** Topic names may come from the environment so that replicas and tests use their own. */
export default orderCustomersTopology({
  ...(process.env.ONCEFLOW_FK_ORDERS ? { orders: process.env.ONCEFLOW_FK_ORDERS } : {}),
  ...(process.env.ONCEFLOW_FK_CUSTOMERS ? { customers: process.env.ONCEFLOW_FK_CUSTOMERS } : {}),
  ...(process.env.ONCEFLOW_FK_ENRICHED ? { enriched: process.env.ONCEFLOW_FK_ENRICHED } : {}),
  ...(process.env.ONCEFLOW_FK_ALL ? { all: process.env.ONCEFLOW_FK_ALL } : {}),
});
