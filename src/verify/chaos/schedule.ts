import { setTimeout as sleep } from 'node:timers/promises';

/** One fault: when it is due, in ms after the faults start, and what it does then. */
export interface FaultEvent {
  readonly at: number;
  readonly run: () => Promise<void>;
}

/**
 * What every fault kind draws from: one seeded stream for all of them, so that a seed fixes the whole
 * schedule, and the span of the feed, so that faults land while records flow.
 */
export interface FaultTimeline {
  readonly random: () => number;
  readonly feedMs: number;
}

/**
 * `count` faults at moments drawn at random over the feed. The moments are drawn here, at once and in
 * order (not when the faults run), so that one seed gives one schedule however long each fault takes.
 */
export function spreadOverFeed(timeline: FaultTimeline, count: number, fault: (index: number) => () => Promise<void>): FaultEvent[] {
  return Array.from({ length: count }, (_, index) => ({ at: timeline.random() * timeline.feedMs, run: fault(index) }));
}

/** A fault at a fixed share of the feed (0.3: when 30 % of it has been written). */
export function atShareOfFeed(timeline: FaultTimeline, share: number, run: () => Promise<void>): FaultEvent {
  return { at: timeline.feedMs * share, run };
}

/**
 * Runs the faults one after another in the order they are due (those due together in the order given),
 * each waiting for its moment; one that runs long delays the rest instead of overlapping them.
 */
export async function runInTimeOrder(events: readonly FaultEvent[]): Promise<void> {
  const due = [...events].sort((a, b) => a.at - b.at);
  const start = Date.now();
  for (const event of due) {
    const wait = event.at - (Date.now() - start);
    if (wait > 0) await sleep(wait);
    await event.run();
  }
}
