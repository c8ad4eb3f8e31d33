import { prng, type InputRecord } from './orders-input.ts';

const SEGMENTS = ['gold', 'silver', 'basic', 'trial'];

export interface EnrichmentInputOptions {
  readonly records: number;
  readonly seed: number;
  readonly poison: number;
  /** The share of events of a known customer that update it (the rest are its orders); an unknown one is updated half the time. */
  readonly updateShare: number;
  /** The `at` (event time) of the `i`-th event, if the events carry one. */
  readonly eventTime?: (i: number, rand: () => number) => number;
}

/**
 * Customer updates interleaved with orders, keyed by customer id, for the enrichment pipelines; some
 * orders come before their customer's first update. The same seed gives the same events.
 */
export function enrichmentEvents({ records, seed, poison, updateShare, eventTime }: EnrichmentInputOptions): InputRecord[] {
  const rand = prng(seed);
  const customers = Math.max(5, Math.floor(records / 40));
  const versions = new Map<string, number>();
  const out: InputRecord[] = [];
  for (let i = 0; i < records; i++) {
    const customerId = `c${Math.floor(rand() * customers)}`;
    const at = eventTime === undefined ? {} : { at: eventTime(i, rand) };
    if (rand() < (versions.has(customerId) ? updateShare : 0.5)) {
      const version = (versions.get(customerId) ?? 0) + 1;
      versions.set(customerId, version);
      out.push({ key: customerId, value: JSON.stringify({ type: 'customer', ...at, customerId, name: `customer ${customerId}`, segment: SEGMENTS[Math.floor(rand() * SEGMENTS.length)], version }) });
    } else {
      out.push({ key: customerId, value: JSON.stringify({ type: 'order', ...at, orderId: `o${i}`, customerId, amount: 1 + Math.floor(rand() * 100) }) });
    }
  }
  for (let p = 0; p < poison; p++) out.splice(Math.floor(rand() * out.length), 0, { key: `c${p % customers}`, value: '{"type": "order", broken' });
  return out;
}
