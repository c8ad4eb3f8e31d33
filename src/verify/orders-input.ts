import { produceRecords } from '../kafka/produce-records.ts';

export interface OrderEvent {
  readonly eventId: string;
  readonly orderId: string;
  readonly customerId: string;
  readonly status: 'CREATED' | 'PAID' | 'CANCELLED' | 'REFUNDED';
  readonly version: number;
  readonly amount: number;
}

export interface InputRecord<V extends string | Buffer = string> {
  readonly key: string;
  /** A string that is not an order (malformed JSON) for poison records; bytes once encoded (registry Avro). */
  readonly value: V;
}

/** Small, fast, seedable PRNG (mulberry32): a fixed seed reproduces the same input and schedule. */
export function prng(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

export interface OrdersInputOptions {
  readonly records: number;
  readonly seed?: number;
  readonly customers?: number;
  /** Share of events sent a second time with the same event id. */
  readonly duplicateRate?: number;
  /** Share of three-event orders whose last two events arrive swapped (an older version after a newer one). */
  readonly outOfOrderRate?: number;
  readonly poison?: number;
}

/**
 * Order lifecycles (CREATED v1 → PAID v2, some REFUNDED v3 or CANCELLED v2), keyed by order id so one
 * order's events share a partition, with duplicated event ids, out-of-order versions and poison records.
 */
export function ordersInput(opts: OrdersInputOptions): InputRecord[] {
  const rand = prng(opts.seed ?? 1);
  const customers = opts.customers ?? 200;
  const out: InputRecord[] = [];
  const pad = 'x'.repeat(40);
  let order = 0;
  while (out.length < opts.records) {
    const orderId = `o${opts.seed ?? 1}-${order++}`;
    const customerId = `c${Math.floor(rand() * customers)}`;
    const amount = 1 + Math.floor(rand() * 500);
    const fate = rand();
    const lifecycle: OrderEvent['status'][] = fate < 0.1 ? ['CREATED', 'CANCELLED'] : fate < 0.25 ? ['CREATED', 'PAID', 'REFUNDED'] : ['CREATED', 'PAID'];
    const events = lifecycle.map((status, i) => ({ eventId: `${orderId}-e${i + 1}`, orderId, customerId, status, version: i + 1, amount, note: pad }));
    if (events.length === 3 && rand() < (opts.outOfOrderRate ?? 0.05)) {
      const [a, b, c] = events as [(typeof events)[0], (typeof events)[0], (typeof events)[0]];
      events.splice(0, 3, a, c, b);
    }
    for (const e of events) {
      const value = JSON.stringify(e);
      out.push({ key: orderId, value });
      if (rand() < (opts.duplicateRate ?? 0.05)) out.push({ key: orderId, value });
    }
  }
  out.length = opts.records;
  const poison = opts.poison ?? 0;
  for (let i = 0; i < poison; i++) {
    const at = Math.floor(((i + 1) * out.length) / (poison + 1));
    out.splice(at, 0, { key: `poison-${i}`, value: `{"eventId": "poison-${i}", not json` });
  }
  return out;
}

/** Produces records with an idempotent producer and waits until all are acknowledged. */
/** `ageMs`: every record is stamped that long before now (a backfill of old data); by default now. */
export async function produceAll(bootstrap: string, topic: string, records: readonly InputRecord<string | Buffer>[], clientOptions: Record<string, string | number | boolean> = {}, ageMs = 0): Promise<void> {
  const timestamp = ageMs > 0 ? Date.now() - ageMs : undefined;
  await produceRecords(bootstrap, topic, records.map((r) => ({ key: Buffer.from(r.key), value: Buffer.from(r.value), ...(timestamp === undefined ? {} : { timestamp }) })), clientOptions);
}
