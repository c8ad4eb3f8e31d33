import type { IncomingRecord } from '../core/records.ts';
import { prng, type InputRecord } from './orders-input.ts';
import { recordId, type ExpectationModel } from './verify.ts';

// The session topology's parameters (topology/sessions.ts), restated: the model is written from the
// topology's documented meaning and never runs its code.
const GAP_MS = 30;
const GRACE_MS = 10;

interface ClickLike {
  user: string;
  at: number;
}

export function parseClick(r: IncomingRecord): ClickLike | undefined {
  try {
    const v = JSON.parse(r.value?.toString() ?? 'null') as ClickLike | null;
    return v && typeof v.user === 'string' && typeof v.at === 'number' ? v : undefined;
  } catch {
    return undefined;
  }
}

/**
 * topology/sessions.ts, as documented: per input partition in offset order, stream time is the largest
 * click time so far; a click more than the grace behind it is dropped. Otherwise it joins every session
 * of its user it is within the gap of (start - gap <= at <= end + gap): they become one session, the
 * others are deleted (a null value), and the session's count is theirs plus one. Closed sessions need
 * no modelling: a click recent enough to count can never reach one.
 */
function run(inputs: readonly IncomingRecord[]): { producers: IncomingRecord[]; final: Map<string, string> } {
  const ordered = [...inputs].sort((a, b) => a.partition - b.partition || a.offset - b.offset);
  const streamTime = new Map<number, number>();
  const sessions = new Map<string, { start: number; end: number; count: number }[]>();
  const final = new Map<string, string>();
  const producers: IncomingRecord[] = [];
  for (const r of ordered) {
    const click = parseClick(r);
    if (!click) continue;
    const now = Math.max(streamTime.get(r.partition) ?? Number.NEGATIVE_INFINITY, click.at);
    streamTime.set(r.partition, now);
    if (click.at + GRACE_MS < now) continue;
    producers.push(r);
    const mine = sessions.get(click.user) ?? [];
    const touched = mine.filter((s) => s.start - GAP_MS <= click.at && click.at <= s.end + GAP_MS);
    const merged = { start: click.at, end: click.at, count: 1 };
    for (const s of touched) {
      merged.start = Math.min(merged.start, s.start);
      merged.end = Math.max(merged.end, s.end);
      merged.count += s.count;
    }
    for (const s of touched) if (s.start !== merged.start || s.end !== merged.end) final.set(`${click.user}@${s.start}-${s.end}`, 'null');
    final.set(`${click.user}@${merged.start}-${merged.end}`, String(merged.count));
    sessions.set(click.user, [...mine.filter((s) => !touched.includes(s)), merged]);
  }
  return { producers, final };
}

/** The output key `<user><start: int64 BE><end: int64 BE>` (a windowed key) as `user@start-end`. */
export function readSession(r: IncomingRecord): { key: string; value: string } {
  const k = r.key ?? Buffer.alloc(16);
  const at = k.length - 16;
  const key = `${k.subarray(0, at).toString('utf8')}@${Number(k.readBigInt64BE(at))}-${Number(k.readBigInt64BE(at + 8))}`;
  return { key, value: r.value === null ? 'null' : String(JSON.parse(r.value.toString())) };
}

/**
 * The model of a topology that counts clicks per user and window (sessions, sliding windows): `run`
 * gives the clicks that produce output and the last value of each window; a poison record must be
 * dead-lettered, so it traces back too.
 */
export function clickWindowsModel(name: string, run: (inputs: readonly IncomingRecord[]) => { producers: IncomingRecord[]; final: Map<string, string> }): ExpectationModel {
  return {
    name,
    expectedProducers: (inputs) => {
      const ids = new Set(run(inputs).producers.map(recordId));
      for (const r of inputs) if (!parseClick(r)) ids.add(recordId(r));
      return ids;
    },
    expectedFinal: (inputs) => run(inputs).final,
    readOutput: readSession,
  };
}

export function sessionsModel(): ExpectationModel {
  return clickWindowsModel('sessions: clicks per user session (gap 30, grace 10), merged-away sessions deleted', run);
}

/**
 * Clicks of a few dozen users on a clock that ticks once per click and sometimes jumps (sessions
 * close); most clicks are a little out of order, a few by more than the grace (late).
 */
/**
 * Click times start at `startAt` (by default the current minute), not near 0: outputs and changelog
 * records carry the click time as their timestamp, and a broker deletes records older than the
 * topic's retention (7 days by default) at its next retention check, mid-run.
 */
export function sessionsInput({ records, seed, poison, startAt = Math.floor(Date.now() / 60_000) * 60_000 }: { records: number; seed: number; poison: number; startAt?: number }): InputRecord[] {
  const rand = prng(seed);
  const users = Math.max(5, Math.floor(records / 80));
  let clock = startAt;
  const out: InputRecord[] = [];
  for (let i = 0; i < records; i++) {
    clock += rand() < 0.005 ? 200 : 1;
    const user = `u${Math.floor(rand() * users)}`;
    const at = clock - Math.floor(rand() ** 4 * 40);
    out.push({ key: user, value: JSON.stringify({ user, at }) });
  }
  for (let p = 0; p < poison; p++) out.splice(Math.floor(rand() * out.length), 0, { key: `u${p % users}`, value: '{"user": broken' });
  return out;
}
