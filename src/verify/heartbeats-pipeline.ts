import type { IncomingRecord } from '../core/records.ts';
import { recordId, type ExpectationModel } from './verify.ts';

// topology/heartbeats.ts's parameters, restated (the model never runs the topology's code).
const TICK_EVERY_MS = 100;

function parseClick(r: IncomingRecord): { user: string; at: number } | undefined {
  try {
    const v = JSON.parse(r.value?.toString() ?? 'null') as { user?: unknown; at?: unknown } | null;
    return v && typeof v.user === 'string' && typeof v.at === 'number' ? { user: v.user, at: v.at } : undefined;
  } catch {
    return undefined;
  }
}

/**
 * topology/heartbeats.ts, as documented: each click counts for its user; per input partition, stream
 * time is the largest click time so far, and each time it crosses a multiple of 100 (not at the first
 * click) `tick-<partition>` takes that multiple. Wall-clock heartbeats are not predictable: they are
 * checked to read 1, 2, 3, ... per partition instead.
 */
function expectedFinal(inputs: readonly IncomingRecord[]): Map<string, string> {
  const final = new Map<string, string>();
  const clicks = new Map<string, number>();
  const lastTick = new Map<number, number>();
  for (const r of [...inputs].sort((a, b) => a.partition - b.partition || a.offset - b.offset)) {
    const click = parseClick(r);
    if (!click) continue;
    const boundary = Math.floor(click.at / TICK_EVERY_MS) * TICK_EVERY_MS;
    const last = lastTick.get(r.partition);
    if (last !== undefined && boundary > last) final.set(`tick-${r.partition}`, String(boundary));
    if (last === undefined || boundary > last) lastTick.set(r.partition, boundary);
    const n = (clicks.get(click.user) ?? 0) + 1;
    clicks.set(click.user, n);
    final.set(click.user, String(n));
  }
  return final;
}

function readOutput(r: IncomingRecord): { key: string; value: string } | undefined {
  const key = r.key?.toString() ?? '';
  return key.startsWith('beat-') ? undefined : { key, value: String(JSON.parse(r.value?.toString() ?? 'null')) };
}

/** Each partition's heartbeats, in the order they were written: exactly 1, 2, 3, ...; and at least one. */
function checkBeats(outputs: readonly IncomingRecord[]): string[] {
  const beats = new Map<string, number[]>();
  for (const r of [...outputs].sort((a, b) => a.partition - b.partition || a.offset - b.offset)) {
    const key = r.key?.toString() ?? '';
    if (key.startsWith('beat-')) (beats.get(key) ?? beats.set(key, []).get(key)!).push(Number(JSON.parse(r.value?.toString() ?? 'null')));
  }
  if (beats.size === 0) return ['no wall-clock heartbeat was written'];
  const violations: string[] = [];
  for (const [key, seq] of beats) {
    const at = seq.findIndex((n, i) => n !== i + 1);
    if (at >= 0) violations.push(`${key}: heartbeat ${at + 1} reads ${seq[at]} (${seq.slice(Math.max(0, at - 2), at + 3).join(', ')})`);
  }
  return violations;
}

export function heartbeatsModel(): ExpectationModel {
  return {
    name: 'heartbeats: clicks per user, stream-time ticks, wall-clock heartbeats numbered in the store',
    expectedProducers: (inputs) => new Set(inputs.map(recordId)),
    expectedFinal,
    readOutput,
    checkOutputs: checkBeats,
  };
}
