// What `describe` says of the stages that act on time: suppression, punctuation, windows and sessions.
import type { CompiledNode, CompiledStore } from '../graph/types.ts';

export interface TimeDetails {
  readonly suppress?: { readonly until: string; readonly timeLimitMs?: number; readonly maxRecords: number; readonly maxBytes: number; readonly whenFull: string };
  readonly punctuations?: readonly { readonly on: string; readonly everyMs: number }[];
}

export function timeDetails(n: CompiledNode): TimeDetails {
  const spec = n.spec;
  if (spec.kind === 'suppress') {
    const s = spec.suppress;
    return { suppress: { until: s.until, ...(s.until === 'time-limit' ? { timeLimitMs: s.timeLimitMs } : {}), maxRecords: s.maxRecords, maxBytes: s.maxBytes, whenFull: s.whenFull } };
  }
  if (spec.kind === 'process' && spec.punctuations.length > 0) return { punctuations: spec.punctuations.map((p) => ({ on: p.on, everyMs: p.everyMs })) };
  return {};
}

/** `, suppress until ...` / `, punctuates every ...`, for the processor line of the text layout. */
export function timeDetailsText(n: CompiledNode): string {
  const d = timeDetails(n);
  if (d.suppress) {
    const s = d.suppress;
    const until = s.until === 'time-limit' ? `at most one update per key per ${s.timeLimitMs}ms` : 'until window closes';
    return `, suppress ${until}, buffer at most ${s.maxRecords} keys / ${s.maxBytes} bytes, when full: ${s.whenFull}`;
  }
  if (d.punctuations) return `, punctuates ${d.punctuations.map((p) => `every ${p.everyMs}ms of ${p.on}`).join(' and ')} (inside the transaction)`;
  return '';
}

export function sessionJson(s: CompiledStore): { readonly session?: { readonly inactivityGapMs: number; readonly graceMs: number; readonly emitFinal: boolean } } {
  return s.session ? { session: { inactivityGapMs: s.session.inactivityGapMs, graceMs: s.session.graceMs, emitFinal: s.session.emitFinal } } : {};
}

export function sessionText(s: CompiledStore): string {
  return s.session ? `, session window gap ${s.session.inactivityGapMs}ms grace ${s.session.graceMs}ms${s.session.emitFinal ? ', emit final' : ''}` : '';
}

/** `, tumbling window size ...` / `, sliding window time difference ...`: a windowed store's windows. */
export function windowText(s: CompiledStore): string {
  const w = s.window;
  if (!w) return sessionText(s);
  const size = w.type === 'sliding' ? `time difference ${w.sizeMs}ms` : `size ${w.sizeMs}ms advance ${w.advanceMs}ms`;
  return `, ${w.type} window ${size} grace ${w.graceMs}ms${w.emitFinal ? ', emit final' : ''}`;
}
