import type { IncomingRecord } from '../core/records.ts';
import type { InputRecord } from './orders-input.ts';
import { enrichmentEvents } from './enrichment-input.ts';
import type { ExpectationModel } from './verify.ts';
import { segmentTotalsModel, type SegmentTotals } from './segment-totals-model.ts';

// topology/enrichment-versioned.ts's parameter, restated: the model is written from the topology's
// documented meaning (a versioned table, KIP-914's stream-table join) and never runs its code.
const HISTORY_RETENTION_MS = 2_000;

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

/**
 * Per input partition in offset order, stream time is the largest event time so far and the horizon
 * is stream time minus the history retention. A customer update behind the horizon is dropped; any
 * other becomes a version of its customer valid from its time (one at the same time replaces it). An
 * order behind the horizon joins nothing; any other joins the version valid at its time, the newest
 * one from its time or before among the updates that came before it in the partition (none: no
 * result), and its amount counts toward that version's segment.
 */
function run(inputs: readonly IncomingRecord[]): SegmentTotals {
  const ordered = [...inputs].sort((a, b) => a.partition - b.partition || a.offset - b.offset);
  const streamTime = new Map<number, number>();
  const versions = new Map<string, Map<number, string>>();
  const joined: IncomingRecord[] = [];
  const totals = new Map<string, number>();
  for (const r of ordered) {
    const e = parseEvent(r);
    if (!e) continue;
    const now = Math.max(streamTime.get(r.partition) ?? Number.NEGATIVE_INFINITY, e.at);
    streamTime.set(r.partition, now);
    if (e.at < now - HISTORY_RETENTION_MS) continue;
    const customerId = r.key?.toString() ?? '';
    const history = versions.get(customerId) ?? versions.set(customerId, new Map()).get(customerId)!;
    if (e.type === 'customer') {
      history.set(e.at, e.segment ?? '');
      continue;
    }
    const validFrom = Math.max(...[...history.keys()].filter((t) => t <= e.at));
    const segment = history.get(validFrom);
    if (segment === undefined) continue;
    joined.push(r);
    totals.set(segment, (totals.get(segment) ?? 0) + (e.amount ?? 0));
  }
  return { joined, totals };
}

export function versionedEnrichmentModel(): ExpectationModel {
  return segmentTotalsModel('enrichment as of event time: customer updates → versioned table; orders join the version valid at their time → total per segment', (r) => parseEvent(r) !== undefined, run);
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
