import type { IncomingRecord } from '../core/records.ts';
import type { InputRecord } from './orders-input.ts';
import { enrichmentEvents } from './enrichment-input.ts';
import type { ExpectationModel } from './verify.ts';
import { segmentTotalsModel, type SegmentTotals } from './segment-totals-model.ts';

// topology/enrichment-versioned.ts's parameters, restated: the model is written from the topology's
// documented meaning (a versioned table, KIP-914's stream-table join, KIP-923's grace period) and never
// runs its code.
const HISTORY_RETENTION_MS = 2_000;
const GRACE_MS = 500;

interface TimedEventLike {
  type: 'customer' | 'order';
  at: number;
  segment?: string;
  amount?: number;
}

function parseEvent(r: IncomingRecord): TimedEventLike | undefined {
  try {
    const v = JSON.parse(r.value?.toString() ?? 'null') as TimedEventLike | null;
    return v && (v.type === 'customer' || v.type === 'order') && typeof v.at === 'number' ? v : undefined;
  } catch {
    return undefined;
  }
}

interface Order {
  readonly record: IncomingRecord;
  readonly customerId: string;
  readonly at: number;
  readonly amount: number;
}

/**
 * Per input partition in offset order, stream time is the largest event time so far and the horizon
 * is stream time minus the history retention. Whenever an event moves stream time, the orders waiting
 * whose time + grace it has reached join first (in time order), then the event counts:
 *  - a customer update behind the horizon is dropped; any other becomes a version of its customer,
 *    valid from its time (one at the same time replaces it);
 *  - an order whose time + grace stream time has reached joins at once, any other waits.
 * An order joins, when it does, the version of its customer valid at its time (the newest one from its
 * time or before among the updates counted so far), nothing when it is behind the horizon then or no
 * version is valid at its time; its amount counts toward that version's segment. Orders still waiting
 * at the end of the input join nothing. A waiting order's result is sent while the event that let it go
 * is processed, so its lineage names that event, as the results of a window closing do.
 */
function run(inputs: readonly IncomingRecord[]): SegmentTotals {
  const ordered = [...inputs].sort((a, b) => a.partition - b.partition || a.offset - b.offset);
  const streamTime = new Map<number, number>();
  const waiting = new Map<number, Order[]>();
  const versions = new Map<string, Map<number, string>>();
  const joined: IncomingRecord[] = [];
  const totals = new Map<string, number>();
  const historyOf = (customerId: string) => versions.get(customerId) ?? versions.set(customerId, new Map()).get(customerId)!;
  /** `by`: the input record being processed when the order joins, which its result stands for. */
  const join = (order: Order, now: number, by: IncomingRecord): void => {
    if (order.at < now - HISTORY_RETENTION_MS) return;
    const history = historyOf(order.customerId);
    const segment = history.get(Math.max(...[...history.keys()].filter((t) => t <= order.at)));
    if (segment === undefined) return;
    joined.push(by);
    totals.set(segment, (totals.get(segment) ?? 0) + order.amount);
  };
  for (const r of ordered) {
    const e = parseEvent(r);
    if (!e) continue;
    const now = Math.max(streamTime.get(r.partition) ?? Number.NEGATIVE_INFINITY, e.at);
    streamTime.set(r.partition, now);
    const held = waiting.get(r.partition) ?? [];
    const due = held.filter((o) => o.at + GRACE_MS <= now).sort((a, b) => a.at - b.at || a.record.offset - b.record.offset);
    waiting.set(r.partition, held.filter((o) => o.at + GRACE_MS > now));
    for (const o of due) join(o, now, r);
    const customerId = r.key?.toString() ?? '';
    if (e.type === 'customer') {
      if (e.at >= now - HISTORY_RETENTION_MS) historyOf(customerId).set(e.at, e.segment ?? '');
      continue;
    }
    const order: Order = { record: r, customerId, at: e.at, amount: e.amount ?? 0 };
    if (e.at + GRACE_MS <= now) join(order, now, r);
    else waiting.get(r.partition)!.push(order);
  }
  return { joined, totals };
}

export function versionedEnrichmentModel(): ExpectationModel {
  return segmentTotalsModel('enrichment as of event time: customer updates → versioned table; orders wait out a 500 ms grace, then join the version valid at their time → total per segment', (r) => parseEvent(r) !== undefined, run);
}

/**
 * Customer updates interleaved with orders, keyed by customer id, on a clock that ticks a millisecond
 * per event: most events are stamped a little before their arrival (out of order, so an order often
 * arrives after a newer update of its customer, and an update after a newer order), and one in a
 * hundred by more than the history retention (late). Times start at `startAt` (by default the
 * current minute): outputs carry them, and a broker deletes records older than a topic's retention.
 */
export function versionedEnrichmentInput({ records, seed, poison, startAt = Math.floor(Date.now() / 60_000) * 60_000 }: { records: number; seed: number; poison: number; startAt?: number }): InputRecord[] {
  const late = (rand: () => number) => HISTORY_RETENTION_MS + Math.floor(rand() * 1_000);
  return enrichmentEvents({ records, seed, poison, updateShare: 0.15, eventTime: (i, rand) => startAt + i - (rand() < 0.01 ? late(rand) : Math.floor(rand() ** 2 * 200)) });
}
