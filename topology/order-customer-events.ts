import { TopologyBuilder } from '../src/dsl/topology-builder.ts';
import { jsonSerde, stringSerde } from '../src/serdes/index.ts';
import { enrich, type CustomerOrder, type EnrichedOrder, type OrderCustomer } from './order-customers.ts';

/** One topic of both sides' changes: order events keyed by order id, customer events by customer id. */
export type OrderCustomerEvent =
  | { readonly type: 'order'; readonly orderId: string; readonly customerId: string; readonly amount: number }
  | { readonly type: 'order-deleted'; readonly orderId: string }
  | { readonly type: 'customer'; readonly customerId: string; readonly name: string; readonly tier: string }
  | { readonly type: 'customer-deleted'; readonly customerId: string };

export interface OrderCustomerEventsOptions {
  readonly input?: string;
  readonly output?: string;
  readonly appId?: string;
}

export const ORDER_CUSTOMER_EVENTS_DEFAULTS = { input: 'order-customer-events', output: 'orders-with-customers', appId: 'order-customer-events' } as const;

const isOrderEvent = (_key: string | null, e: OrderCustomerEvent): boolean => e.type === 'order' || e.type === 'order-deleted';
const isCustomerEvent = (_key: string | null, e: OrderCustomerEvent): boolean => e.type === 'customer' || e.type === 'customer-deleted';
const orderIdOf = (_key: string | null, e: OrderCustomerEvent): string | null => (e.type === 'order' || e.type === 'order-deleted' ? e.orderId : null);
const customerIdOf = (_key: string | null, e: OrderCustomerEvent): string | null => (e.type === 'customer' || e.type === 'customer-deleted' ? e.customerId : null);
const orderRow = (e: OrderCustomerEvent): CustomerOrder | null => (e.type === 'order' ? { customerId: e.customerId, amount: e.amount } : null);
const customerRow = (e: OrderCustomerEvent): OrderCustomer | null => (e.type === 'customer' ? { name: e.name, tier: e.tier } : null);

/**
 * topology/order-customers.ts's left foreign-key join, fed from one topic so that the chaos harness
 * (one input, one output) can run it: each side's events are re-keyed by their row's id into a table
 * of its own (a deletion event deletes the row), and every order is joined with the customer of its
 * `customerId`, or null. Each table sits in a sub-topology of its own, so the join's subscriptions
 * and answers travel between tasks through Kafka as they would between two source tables.
 */
export function orderCustomerEventsTopology(opts: OrderCustomerEventsOptions = {}): TopologyBuilder {
  const o = { ...ORDER_CUSTOMER_EVENTS_DEFAULTS, ...opts };
  const app = new TopologyBuilder({ appId: o.appId });
  const events = app.stream(o.input, { key: stringSerde, value: jsonSerde<OrderCustomerEvent>() });
  const { orders, customers } = events.branch({ orders: isOrderEvent, customers: isCustomerEvent });
  const orderTable = orders
    .selectKey(orderIdOf, { key: stringSerde })
    .mapValues(orderRow, { value: jsonSerde<CustomerOrder>({ nullable: true }) })
    .toTable({ name: 'orders', store: 'orders' });
  const customerTable = customers
    .selectKey(customerIdOf, { key: stringSerde })
    .mapValues(customerRow, { value: jsonSerde<OrderCustomer>({ nullable: true }) })
    .toTable({ name: 'customers', store: 'customers' });
  orderTable
    .leftJoin(customerTable, (order) => order?.customerId ?? null, (id, order, customer) => (order === null ? null : enrich(String(id), order, customer)), { name: 'orders-with-customers' })
    .toStream()
    .to(o.output, { value: jsonSerde<EnrichedOrder>({ nullable: true }) });
  return app;
}

/** Topic names may come from the environment so that replicas and the chaos harness use their own. */
export default orderCustomerEventsTopology({
  ...(process.env.ONCEFLOW_FK_EVENTS_INPUT ? { input: process.env.ONCEFLOW_FK_EVENTS_INPUT } : {}),
  ...(process.env.ONCEFLOW_FK_EVENTS_OUTPUT ? { output: process.env.ONCEFLOW_FK_EVENTS_OUTPUT } : {}),
});
