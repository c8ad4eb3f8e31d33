/** What the console reads of one worker's `/metrics`: the sums it turns into rates, and who the worker is. */
export interface MemberSample {
  /** When the console took it (its own clock), ms. */
  readonly at: number;
  readonly transactionalId: string | undefined;
  readonly state: string | undefined;
  readonly recordsConsumed: number;
  readonly recordsProduced: number;
  readonly transactionsCommitted: number;
  readonly transactionsAborted: number;
  readonly fencings: number;
  readonly rebalances: number;
  /** ms since the epoch; 0 before the first commit. */
  readonly lastCommitAt: number;
  /** Changelog records its running restores have still to read. */
  readonly restoreRemaining: number;
  /** Tasks of other members it keeps warm. */
  readonly standbyTasks: number;
}

interface Series {
  readonly name: string;
  readonly labels: ReadonlyMap<string, string>;
  readonly value: number;
}

const LINE = /^([a-zA-Z_:][a-zA-Z0-9_:]*)(?:\{(.*)\})?\s+(\S+)/;
const LABEL = /([a-zA-Z_][a-zA-Z0-9_]*)="((?:[^"\\]|\\.)*)"/g;

/** Prometheus' text format, the subset prom-client writes: one sample a line, `#` lines are comments. */
export function parseExposition(text: string): Series[] {
  const out: Series[] = [];
  for (const line of text.split('\n')) {
    if (line.startsWith('#')) continue;
    const m = LINE.exec(line);
    if (!m) continue;
    const labels = new Map<string, string>();
    for (const l of (m[2] ?? '').matchAll(LABEL)) labels.set(l[1] ?? '', (l[2] ?? '').replace(/\\(.)/g, '$1'));
    out.push({ name: m[1] ?? '', labels, value: Number(m[3]) });
  }
  return out;
}

export function memberSample(text: string, at: number): MemberSample {
  const series = parseExposition(text);
  const sum = (name: string): number => series.filter((s) => s.name === name).reduce((n, s) => n + (Number.isFinite(s.value) ? s.value : 0), 0);
  const info = series.find((s) => s.name === 'onceflow_worker_info');
  return {
    at,
    transactionalId: info?.labels.get('transactional_id'),
    state: info?.labels.get('state'),
    recordsConsumed: sum('onceflow_records_consumed_total'),
    recordsProduced: sum('onceflow_records_produced_total'),
    transactionsCommitted: sum('onceflow_transactions_committed_total'),
    transactionsAborted: sum('onceflow_transactions_aborted_total'),
    fencings: sum('onceflow_fencing_events_total'),
    rebalances: sum('onceflow_rebalances_total'),
    lastCommitAt: sum('onceflow_last_commit_timestamp_seconds') * 1000,
    restoreRemaining: sum('onceflow_restore_remaining_records'),
    standbyTasks: sum('onceflow_standby_tasks'),
  };
}

export type Scrape = { readonly ok: true; readonly url: string; readonly sample: MemberSample } | { readonly ok: false; readonly url: string; readonly error: string };

/** One GET of a worker's `/metrics`, bounded: an unreachable member must not hold up the console's refresh. */
export async function scrapeMember(url: string, timeoutMs: number, now: () => number = Date.now): Promise<Scrape> {
  try {
    const res = await fetch(url, { signal: AbortSignal.timeout(timeoutMs) });
    if (!res.ok) return { ok: false, url, error: `HTTP ${res.status}` };
    return { ok: true, url, sample: memberSample(await res.text(), now()) };
  } catch (e) {
    const cause = e instanceof Error && e.cause instanceof Error ? `: ${e.cause.message}` : '';
    return { ok: false, url, error: `${e instanceof Error ? e.message : String(e)}${cause}` };
  }
}

/** Samples of one member over the last minute; rates come from the two ends of the window. */
export class SampleWindow {
  readonly #samples: MemberSample[] = [];
  constructor(private readonly spanMs = 60_000) {}

  add(s: MemberSample): void {
    // A restarted worker starts its counters at zero: what came before belongs to another incarnation.
    const last = this.#samples.at(-1);
    if (last && s.transactionsCommitted < last.transactionsCommitted) this.#samples.length = 0;
    this.#samples.push(s);
    while (this.#samples.length > 2 && (this.#samples[0]?.at ?? s.at) < s.at - this.spanMs) this.#samples.shift();
  }

  /** Per second between the last two samples: what is happening now. */
  ratePerSecond(field: 'recordsConsumed' | 'recordsProduced' | 'transactionsCommitted'): number | undefined {
    const last = this.#samples.at(-1);
    const before = this.#samples.at(-2);
    if (!last || !before || last.at <= before.at) return undefined;
    return ((last[field] - before[field]) * 1000) / (last.at - before.at);
  }

  /** Growth over the window (up to a minute). */
  increase(field: 'transactionsCommitted' | 'transactionsAborted'): number | undefined {
    const last = this.#samples.at(-1);
    const first = this.#samples[0];
    if (!last || !first) return undefined;
    return last[field] - first[field];
  }
}
