// Sliding windows on event time (Kafka Streams' SlidingWindows, KIP-450): a window of a fixed time
// difference per distinct set of records, rather than per fixed boundary.
import type { WindowSpec } from './types.ts';
import type { WindowOptions } from './windows.ts';

/**
 * Sliding windows of `timeDifferenceMs`: each record at `t` has the window `[t - timeDifferenceMs, t]`
 * (both ends included) with every record of its key in it, and, once a later record falls within
 * `timeDifferenceMs` of it, the window `[t + 1, t + 1 + timeDifferenceMs]` of the records after it; a
 * record also updates every existing window that contains it. A window closes once stream time passes
 * its end plus `graceMs`; a record whose windows have all closed is late.
 */
export function slidingWindow(timeDifferenceMs: number, opts: WindowOptions = {}): WindowSpec {
  // advanceMs 1: a sliding window may start at any millisecond
  return { type: 'sliding', sizeMs: timeDifferenceMs, advanceMs: 1, graceMs: opts.graceMs ?? 0, emitFinal: opts.emitFinal ?? false, lateRecords: opts.lateRecords ?? 'drop' };
}

/** Stream time at which a window of `spec` ending at `end` closes (a sliding window's end is included). */
export function windowCloseTime(end: number, spec: WindowSpec): number {
  return end + spec.graceMs + (spec.type === 'sliding' ? 1 : 0);
}
