import type { WindowSpec } from './types.ts';

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
