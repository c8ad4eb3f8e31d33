import type { IncomingRecord } from '../core/records.ts';
import type { ExpectationModel } from './verify.ts';
import { clickWindowsModel, parseClick } from './sessions-pipeline.ts';

// topology/click-bursts.ts's parameters, restated: the model is written from the topology's
// documented meaning (Kafka Streams' sliding windows) and never runs its code.
const WINDOW_MS = 20;
const GRACE_MS = 50;

/**
 * topology/click-bursts.ts, as documented: per input partition in offset order, stream time is the
 * largest click time so far, and a click more than window + grace behind it is dropped. A user's
 * windows are, for each of its clicks at t, [t - 20, t], and [t + 1, t + 21] when another click
 * falls in it; each window's count is the number of the user's clicks in it. Windows close once
 * stream time passes end + grace, which the sessions feed (clicks at most 40 ms out of order) never
 * lets happen before the last click of a window came, so the counts of the definition are final.
 */
function run(inputs: readonly IncomingRecord[]): { producers: IncomingRecord[]; final: Map<string, string> } {
  const streamTime = new Map<number, number>();
  const times = new Map<string, number[]>();
  const producers: IncomingRecord[] = [];
  for (const r of [...inputs].sort((a, b) => a.partition - b.partition || a.offset - b.offset)) {
    const click = parseClick(r);
    if (!click) continue;
    const now = Math.max(streamTime.get(r.partition) ?? Number.NEGATIVE_INFINITY, click.at);
    streamTime.set(r.partition, now);
    if (click.at + WINDOW_MS + GRACE_MS < now) continue;
    producers.push(r);
    (times.get(click.user) ?? times.set(click.user, []).get(click.user)!).push(click.at);
  }
  const final = new Map<string, string>();
  for (const [user, clicks] of times) {
    const sorted = [...clicks].sort((a, b) => a - b);
    const starts = new Set<number>();
    sorted.forEach((t, i) => {
      starts.add(t - WINDOW_MS);
      const next = sorted.slice(i + 1).find((u) => u > t);
      if (next !== undefined && next <= t + 1 + WINDOW_MS) starts.add(t + 1);
    });
    for (const start of starts) final.set(`${user}@${start}-${start + WINDOW_MS}`, String(sorted.filter((t) => t >= start && t <= start + WINDOW_MS).length));
  }
  return { producers, final };
}

export function slidingModel(): ExpectationModel {
  return clickWindowsModel(`click-bursts: clicks per user in sliding windows (time difference ${WINDOW_MS}, grace ${GRACE_MS})`, run);
}
