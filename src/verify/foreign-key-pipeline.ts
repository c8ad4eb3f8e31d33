import type { IncomingRecord } from '../core/records.ts';
import { prng, type InputRecord } from './orders-input.ts';
import { recordId, type ExpectationModel } from './verify.ts';

// topology/order-customer-events.ts's meaning, restated: the model never runs the topology's code.

interface EventLike {
  type: 'order' | 'order-deleted' | 'customer' | 'customer-deleted';
  orderId?: string;
  customerId?: string;
  amount?: number;
  name?: string;
  tier?: string;
}

const TYPES: ReadonlySet<string> = new Set(['order', 'order-deleted', 'customer', 'customer-deleted']);

function parseEvent(r: IncomingRecord): EventLike | undefined {
  try {
    const v = JSON.parse(r.value?.toString() ?? 'null') as EventLike | null;
    return v && TYPES.has(v.type) ? v : undefined;
  } catch {
    return undefined;
  }
}

/** JSON with keys in one order, so that the model's rows and the output's compare as text. */
function canonical(value: unknown): string {
  if (value === null || typeof value !== 'object') return JSON.stringify(value);
  const entries = Object.entries(value as Record<string, unknown>).sort(([a], [b]) => a.localeCompare(b));
  return `{${entries.map(([k, v]) => `${JSON.stringify(k)}:${canonical(v)}`).join(',')}}`;
}

/**
 * The two tables' final rows: an order's or a customer's events are keyed by its id, so they are all
 * in one input partition, where the last one by offset is its row (a deletion event: no row). Every
 * order id ever seen ends with its result: the order joined with its customer's final row (null
 * fields when there is none), or a deletion (null) when the order was deleted last.
 */
function expectedResults(inputs: readonly IncomingRecord[]): Map<string, string> {
  const orders = new Map<string, { customerId: string; amount: number } | null>();
  const customers = new Map<string, { name: string; tier: string }>();
  for (const r of [...inputs].sort((a, b) => a.partition - b.partition || a.offset - b.offset)) {
    const e = parseEvent(r);
    if (e?.type === 'order') orders.set(e.orderId!, { customerId: e.customerId!, amount: e.amount! });
    else if (e?.type === 'order-deleted') orders.set(e.orderId!, null);
    else if (e?.type === 'customer') customers.set(e.customerId!, { name: e.name!, tier: e.tier! });
    else if (e?.type === 'customer-deleted') customers.delete(e.customerId!);
  }
  const out = new Map<string, string>();
  for (const [orderId, order] of orders) {
    const customer = order === null ? undefined : customers.get(order.customerId);
    out.set(orderId, order === null ? 'null' : canonical({ orderId, customerId: order.customerId, amount: order.amount, customer: customer?.name ?? null, tier: customer?.tier ?? null }));
  }
  return out;
}

export function foreignKeyModel(): ExpectationModel {
  return {
    name: 'foreign-key: order and customer events → two tables; orders left-joined with the customer of their customerId',
    // Every event is re-keyed into its table's repartition topic; a poison record is dead-lettered.
    expectedProducers: (inputs) => new Set(inputs.map(recordId)),
    expectedFinal: expectedResults,
    readOutput: (r) => ({ key: r.key?.toString() ?? '', value: r.value === null ? 'null' : canonical(JSON.parse(r.value.toString())) }),
  };
}

const TIERS = ['gold', 'silver', 'basic'];

/**
 * Order events keyed by order id and customer events keyed by customer id, interleaved: orders
 * created and moved to another customer (often one with no row yet or any more), orders deleted,
 * customers created, renamed and deleted.
 */
export function foreignKeyInput({ records, seed, poison }: { records: number; seed: number; poison: number }): InputRecord[] {
  const rand = prng(seed);
  const orders = Math.max(10, Math.floor(records / 20));
  const customers = Math.max(5, Math.floor(records / 100));
  const pick = (n: number): number => Math.floor(rand() * n);
  const out: InputRecord[] = [];
  for (let i = 0; i < records; i++) {
    const dice = rand();
    const orderId = `o${pick(orders)}`;
    const customerId = `c${pick(customers)}`;
    if (dice < 0.55) out.push({ key: orderId, value: JSON.stringify({ type: 'order', orderId, customerId, amount: 1 + pick(100) }) });
    else if (dice < 0.63) out.push({ key: orderId, value: JSON.stringify({ type: 'order-deleted', orderId }) });
    else if (dice < 0.93) out.push({ key: customerId, value: JSON.stringify({ type: 'customer', customerId, name: `customer ${customerId} #${i}`, tier: TIERS[pick(TIERS.length)] }) });
    else out.push({ key: customerId, value: JSON.stringify({ type: 'customer-deleted', customerId }) });
  }
  for (let p = 0; p < poison; p++) out.splice(pick(out.length), 0, { key: `o${p % orders}`, value: '{"type": "order", broken' });
  return out;
}
