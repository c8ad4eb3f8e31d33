/** Stage functions of the orders example, kept pure so they can be unit-tested and reused. */

export type OrderStatus = 'CREATED' | 'PAID' | 'CANCELLED' | 'REFUNDED';

export interface Order {
  readonly eventId: string;
  readonly orderId: string;
  readonly customerId: string;
  readonly status: OrderStatus;
  readonly version: number;
  readonly amount: number;
}

/**
 * Per-customer state: the paid amount of each order (facts), not a running total, so an order that
 * is paid again with a higher version replaces its amount instead of adding it twice, and an order
 * that leaves PAID (cancelled, refunded) stops counting.
 */
export interface CustomerPaid {
  readonly paid: Readonly<Record<string, number>>;
  readonly total: number;
}

export const emptyCustomerPaid = (): CustomerPaid => ({ paid: {}, total: 0 });

export function applyOrder(_customerId: string | null, order: Order, state: CustomerPaid): CustomerPaid {
  const paid: Record<string, number> = { ...state.paid };
  if (order.status === 'PAID') paid[order.orderId] = order.amount;
  else delete paid[order.orderId];
  let total = 0;
  for (const amount of Object.values(paid)) total += amount;
  return { paid, total };
}

export const eventIdOf = (_key: string | null, o: Order): string => o.eventId;
export const versionOf = (_key: string | null, o: Order): number => o.version;
