import type { WindowSpec } from './types.ts';
import type { JoinWindowSpec } from './nodes.ts';

export interface WindowOptions {
  /** How long after a window ends late records are still accepted, in stream time. Default 0. */
  readonly graceMs?: number;
  /** Emit one final result per window when it closes instead of every update. Default false. */
  readonly emitFinal?: boolean;
  /** Late records are always counted; 'dead-letter' also sends them to the dead-letter topic. Default 'drop'. */
  readonly lateRecords?: 'drop' | 'dead-letter';
}

/** Non-overlapping windows `[n*size, (n+1)*size)`. Sizes are validated at compile time. */
export function tumblingWindow(sizeMs: number, opts: WindowOptions = {}): WindowSpec {
  return { type: 'tumbling', sizeMs, advanceMs: sizeMs, graceMs: opts.graceMs ?? 0, emitFinal: opts.emitFinal ?? false, lateRecords: opts.lateRecords ?? 'drop' };
}

/** Overlapping windows of `sizeMs` starting every `advanceMs`; a record falls into size/advance windows. */
export function hoppingWindow(sizeMs: number, advanceMs: number, opts: WindowOptions = {}): WindowSpec {
  return { type: 'hopping', sizeMs, advanceMs, graceMs: opts.graceMs ?? 0, emitFinal: opts.emitFinal ?? false, lateRecords: opts.lateRecords ?? 'drop' };
}

/**
 * The window of a stream-stream join: records of the two sides match when their timestamps differ
 * by at most the time difference (`before` / `after` narrow either direction). A left or outer result
 * for a record without a match is emitted once its window closes: stream time past its timestamp
 * plus `after` (or `before`, for the other side) plus the grace period.
 */
export class JoinWindows {
  private constructor(readonly spec: JoinWindowSpec) {}

  /** Matches the other side's records at most `timeDifferenceMs` before or after; no grace. */
  static of(timeDifferenceMs: number): JoinWindows {
    return new JoinWindows({ beforeMs: timeDifferenceMs, afterMs: timeDifferenceMs, graceMs: 0 });
  }

  /** How long, in stream time, out-of-order records are still joined after their window ended. */
  grace(graceMs: number): JoinWindows {
    return new JoinWindows({ ...this.spec, graceMs });
  }

  /** The other side's records at most `ms` older than this side's record match. */
  before(ms: number): JoinWindows {
    return new JoinWindows({ ...this.spec, beforeMs: ms });
  }

  /** The other side's records at most `ms` newer than this side's record match. */
  after(ms: number): JoinWindows {
    return new JoinWindows({ ...this.spec, afterMs: ms });
  }
}
