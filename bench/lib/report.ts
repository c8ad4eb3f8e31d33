import { existsSync, readFileSync, writeFileSync } from 'node:fs';
import { basename } from 'node:path';
import type { VerifyReport } from '../../src/verify/verify.ts';
import { CONTENDERS, type BenchPipeline, type ContenderName } from './contenders.ts';

export interface RunResult {
  pipeline: BenchPipeline;
  contender: ContenderName;
  round: number;
  commitIntervalMs: number;
  sweep: boolean;
  appId: string;
  inputRecords: number;
  /** Input records / time, from the first to the last poll of the group's committed offsets (backlog). */
  throughput: number | undefined;
  windowMs?: number | undefined;
  /** Output records / (last − first output visible to the read_committed reader), backlog phase. */
  visibleThroughput?: number | undefined;
  visibleWindowMs?: number | undefined;
  startupMs?: number | undefined;
  backlogOutputRecords?: number;
  commitEvents?: number;
  /** onceflow's own view: records in `committed` events / time from first to last such event. */
  commitEventThroughput?: number | undefined;
  aborted?: number;
  p50Ms?: number | undefined;
  p99Ms?: number | undefined;
  maxLatencyMs?: number | undefined;
  probeOutputs?: number;
  /** utime+stime of the processor from its start to the end of the backlog. */
  cpuSeconds?: number | undefined;
  cpuSecondsTotal?: number | undefined;
  cpuMicrosPerRecord?: number | undefined;
  peakRssMb?: number | undefined;
  exitCode?: number | null;
  error?: string;
  events?: string[];
  verify?: VerifyReport | undefined;
}

export interface ContenderSummary {
  throughput: number | undefined;
  throughputRuns: (number | undefined)[];
  p50Ms: number | undefined;
  p99Ms: number | undefined;
  cpuSeconds: number | undefined;
  cpuMicrosPerRecord: number | undefined;
  peakRssMb: number | undefined;
  verified: string | undefined;
}

export interface BenchResults {
  date: string;
  quick: boolean;
  /** Written after a pipeline, before the bench finished: the runs so far. */
  partial?: boolean;
  command: string;
  machine: { cpus: number; cpuModel: string; memGb: number; kernel: string };
  versions: Record<string, string>;
  settings: Record<string, unknown>;
  summary: Record<string, Partial<Record<ContenderName, ContenderSummary>>>;
  /** Per pipeline, each of RATIOS by its key: the first contender's mean throughput over the second's. */
  ratios: Record<string, Partial<Record<RatioKey, number | undefined>>>;
  p99Ms: Record<string, Partial<Record<ContenderName, number | undefined>>>;
  sweep: Record<string, Record<string, { throughput: number | undefined; p50Ms: number | undefined; p99Ms: number | undefined }>>;
  /** Per pipeline, every other contender's final aggregates against onceflow EOS's (the name predates the thread contenders). */
  kafkaStreamsAgreement: Record<string, { compared: boolean; equal: boolean | undefined; detail: string }>;
  verifyNotes: string[];
  runs: RunResult[];
}

/** The throughput ratios the bench reports, in column order: [numerator, denominator]. */
export const RATIOS = {
  eosVsKafkaStreams: { label: 'onceflow EOS / Kafka Streams EOS', of: ['onceflow-eos', 'kafka-streams-eos'] },
  eos2tVsKafkaStreams2t: { label: 'onceflow EOS 2 threads / Kafka Streams EOS 2 stream threads', of: ['onceflow-eos-2t', 'kafka-streams-eos-2t'] },
  eos2tVsEos: { label: 'onceflow EOS 2 threads / 1 thread', of: ['onceflow-eos-2t', 'onceflow-eos'] },
  eosVsEos0t: { label: 'onceflow EOS 1 thread / 0 threads', of: ['onceflow-eos', 'onceflow-eos-0t'] },
  kafkaStreams2tVsKafkaStreams: { label: 'Kafka Streams EOS 2 / 1 stream threads', of: ['kafka-streams-eos-2t', 'kafka-streams-eos'] },
  eosVsAtLeastOnce: { label: 'onceflow EOS / onceflow ALOS', of: ['onceflow-eos', 'onceflow-alos'] },
  eosVsLimit: { label: 'onceflow EOS / limit', of: ['onceflow-eos', 'limit'] },
  eosVsBaseline: { label: 'onceflow EOS / baseline EOS', of: ['onceflow-eos', 'baseline-eos'] },
} as const satisfies Record<string, { label: string; of: readonly [ContenderName, ContenderName] }>;
export type RatioKey = keyof typeof RATIOS;

const mean = (xs: (number | undefined)[]): number | undefined => {
  const v = xs.filter((x): x is number => x !== undefined && Number.isFinite(x));
  return v.length ? v.reduce((a, b) => a + b, 0) / v.length : undefined;
};
const ratio = (a: number | undefined, b: number | undefined) => (a !== undefined && b !== undefined && b > 0 ? a / b : undefined);

export function summarize(runs: readonly RunResult[], pipelines: readonly BenchPipeline[]): Pick<BenchResults, 'summary' | 'ratios' | 'p99Ms' | 'sweep'> {
  const summary: BenchResults['summary'] = {};
  const ratios: BenchResults['ratios'] = {};
  const p99Ms: BenchResults['p99Ms'] = {};
  const sweep: BenchResults['sweep'] = {};
  for (const p of pipelines) {
    summary[p] = {};
    p99Ms[p] = {};
    for (const c of CONTENDERS) {
      const rs = runs.filter((r) => r.pipeline === p && r.contender === c && !r.sweep);
      if (rs.length === 0) continue;
      const verified = rs.some((r) => r.verify) ? rs.map((r) => (r.verify ? (r.verify.ok ? 'ok' : 'FAIL') : '—')).join('/') : undefined;
      summary[p][c] = {
        throughput: mean(rs.map((r) => r.throughput)),
        throughputRuns: rs.map((r) => r.throughput),
        p50Ms: mean(rs.map((r) => r.p50Ms)),
        p99Ms: mean(rs.map((r) => r.p99Ms)),
        cpuSeconds: mean(rs.map((r) => r.cpuSeconds)),
        cpuMicrosPerRecord: mean(rs.map((r) => r.cpuMicrosPerRecord)),
        peakRssMb: Math.max(...rs.map((r) => r.peakRssMb ?? 0)) || undefined,
        verified,
      };
      p99Ms[p][c] = summary[p][c]!.p99Ms;
    }
    const s = summary[p];
    ratios[p] = Object.fromEntries(Object.entries(RATIOS).map(([key, { of: [a, b] }]) => [key, ratio(s[a]?.throughput, s[b]?.throughput)]));
    const eos = runs.filter((r) => r.pipeline === p && r.contender === 'onceflow-eos');
    const intervals = [...new Set(eos.map((r) => r.commitIntervalMs))].sort((a, b) => a - b);
    if (intervals.length > 1) {
      sweep[p] = {};
      for (const ms of intervals) {
        const rs = eos.filter((r) => r.commitIntervalMs === ms);
        sweep[p][String(ms)] = { throughput: mean(rs.map((r) => r.throughput)), p50Ms: mean(rs.map((r) => r.p50Ms)), p99Ms: mean(rs.map((r) => r.p99Ms)) };
      }
    }
  }
  return { summary, ratios, p99Ms, sweep };
}

const f = (n: number | undefined, digits = 0): string => (n === undefined || !Number.isFinite(n) ? '—' : n.toLocaleString('en-US', { maximumFractionDigits: digits, minimumFractionDigits: digits }));
const fr = (n: number | undefined): string => (n === undefined ? '—' : `${n.toFixed(2)}×`);

/** Markdown tables: per contender, ratios, commit-interval sweep, correctness. */
export function renderTable(r: BenchResults): string {
  const lines: string[] = [];
  lines.push('| pipeline | contender | throughput (rec/s) | runs | p50 (ms) | p99 (ms) | CPU (s) | CPU (µs/rec) | peak RSS (MB) | verify |');
  lines.push('|---|---|---:|---|---:|---:|---:|---:|---:|---|');
  for (const [p, byC] of Object.entries(r.summary)) {
    for (const c of CONTENDERS) {
      const s = byC[c];
      if (!s) continue;
      lines.push(`| ${p} | ${c} | ${f(s.throughput)} | ${s.throughputRuns.map((t) => f(t)).join(' / ')} | ${f(s.p50Ms)} | ${f(s.p99Ms)} | ${f(s.cpuSeconds, 1)} | ${f(s.cpuMicrosPerRecord, 1)} | ${f(s.peakRssMb)} | ${s.verified ?? ''} |`);
    }
  }
  lines.push('');
  // Only the ratios some pipeline has both contenders for: a run without Kafka Streams has no such column.
  const ratioKeys = (Object.keys(RATIOS) as RatioKey[]).filter((k) => Object.values(r.ratios).some((x) => x[k] !== undefined));
  if (ratioKeys.length > 0) {
    lines.push(`| pipeline | ${ratioKeys.map((k) => RATIOS[k].label).join(' | ')} |`, `|---|${ratioKeys.map(() => '---:').join('|')}|`);
    for (const [p, x] of Object.entries(r.ratios)) lines.push(`| ${p} | ${ratioKeys.map((k) => fr(x[k])).join(' | ')} |`);
  }
  const withRss = CONTENDERS.filter((c) => Object.values(r.summary).some((byC) => byC[c]?.peakRssMb !== undefined));
  if (withRss.length > 0) {
    lines.push('', `| pipeline | ${withRss.map((c) => `${c} peak RSS (MB)`).join(' | ')} |`, `|---|${withRss.map(() => '---:').join('|')}|`);
    for (const [p, byC] of Object.entries(r.summary)) lines.push(`| ${p} | ${withRss.map((c) => f(byC[c]?.peakRssMb)).join(' | ')} |`);
  }
  if (Object.keys(r.sweep).length) {
    lines.push('');
    lines.push('| pipeline | commit interval (ms) | onceflow EOS throughput (rec/s) | p50 (ms) | p99 (ms) |');
    lines.push('|---|---:|---:|---:|---:|');
    for (const [p, byMs] of Object.entries(r.sweep)) for (const [ms, s] of Object.entries(byMs)) lines.push(`| ${p} | ${ms} | ${f(s.throughput)} | ${f(s.p50Ms)} | ${f(s.p99Ms)} |`);
  }
  lines.push('');
  for (const [p, a] of Object.entries(r.kafkaStreamsAgreement)) {
    lines.push(`- ${p}: final aggregates against onceflow EOS's: ${a.equal === undefined ? 'not compared' : a.equal ? 'equal' : 'DIFFERENT'}${a.detail ? ` (${a.detail})` : ''}`);
  }
  for (const n of r.verifyNotes) lines.push(`- ${n}`);
  return lines.join('\n');
}

const COLORS: Record<ContenderName, string> = {
  'onceflow-eos': '#2b6cb0',
  'onceflow-eos-2t': '#1a365d',
  'onceflow-eos-0t': '#63b3ed',
  'baseline-eos': '#a0aec0',
  'onceflow-alos': '#90cdf4',
  'kafka-streams-eos': '#dd6b20',
  'kafka-streams-eos-2t': '#9c4221',
  limit: '#718096',
  'onceflow-eos-trace1pct': '#38a169',
  'onceflow-eos-trace100pct': '#22543d',
};

const esc = (s: string) => s.replace(/&/g, '&amp;').replace(/</g, '&lt;');

/** Horizontal bars: throughput (left) and p99 latency (right) per contender, one row per pipeline. */
export function renderSvg(r: BenchResults): string {
  const pipelines = Object.keys(r.summary);
  const rowH = 24;
  const block = CONTENDERS.length * rowH + 40;
  const W = 960;
  const label = 140;
  const panelW = (W - label - 60) / 2;
  const H = 60 + pipelines.length * block + 30;
  const out: string[] = [];
  out.push(`<svg xmlns="http://www.w3.org/2000/svg" width="${W}" height="${H}" viewBox="0 0 ${W} ${H}" font-family="sans-serif" font-size="12">`);
  out.push(`<rect width="${W}" height="${H}" fill="white"/>`);
  out.push(`<text x="10" y="22" font-size="15" font-weight="bold">onceflow benchmark ${esc(r.date.slice(0, 10))}${r.quick ? ' (quick)' : ''}: throughput and p99 latency</text>`);
  out.push(`<text x="${label}" y="44" font-weight="bold">throughput (input records/s, higher is better)</text>`);
  out.push(`<text x="${label + panelW + 40}" y="44" font-weight="bold">p99 end-to-end latency (ms, lower is better)</text>`);
  pipelines.forEach((p, i) => {
    const y0 = 60 + i * block;
    const byC = r.summary[p]!;
    const maxT = Math.max(1, ...CONTENDERS.map((c) => byC[c]?.throughput ?? 0));
    const maxL = Math.max(1, ...CONTENDERS.map((c) => byC[c]?.p99Ms ?? 0));
    out.push(`<text x="10" y="${y0 + 14}" font-weight="bold">${esc(p)}</text>`);
    CONTENDERS.forEach((c, j) => {
      const s = byC[c];
      const y = y0 + 22 + j * rowH;
      out.push(`<text x="${label - 6}" y="${y + 14}" text-anchor="end">${c}</text>`);
      if (!s) return;
      const tw = ((s.throughput ?? 0) / maxT) * (panelW - 70);
      const lw = ((s.p99Ms ?? 0) / maxL) * (panelW - 70);
      out.push(`<rect x="${label}" y="${y}" width="${tw.toFixed(1)}" height="${rowH - 6}" fill="${COLORS[c]}"/>`);
      out.push(`<text x="${label + tw + 4}" y="${y + 14}">${f(s.throughput)}</text>`);
      const lx = label + panelW + 40;
      out.push(`<rect x="${lx}" y="${y}" width="${lw.toFixed(1)}" height="${rowH - 6}" fill="${COLORS[c]}"/>`);
      out.push(`<text x="${lx + lw + 4}" y="${y + 14}">${f(s.p99Ms)}</text>`);
    });
  });
  out.push(`<text x="10" y="${H - 10}" fill="#555">${esc(`${r.machine.cpus} × ${r.machine.cpuModel}; node ${r.versions.node}; ${r.versions.java}; Kafka ${r.versions.kafkaBroker}`)}</text>`);
  out.push('</svg>');
  return `${out.join('\n')}\n`;
}

const START = '<!-- bench:results:start -->';
const END = '<!-- bench:results:end -->';

/** Replaces the generated section of bench/README.md, leaving the hand-written text around it. */
export function updateReadme(file: string, r: BenchResults, jsonFile: string, svgFile: string): void {
  if (!existsSync(file)) return;
  const text = readFileSync(file, 'utf8');
  const a = text.indexOf(START);
  const b = text.indexOf(END);
  if (a < 0 || b < a) return;
  const body = [
    START,
    '',
    `Run ${r.date.slice(0, 16).replace('T', ' ')} UTC${r.quick ? ' (**--quick**: short smoke run, figures are indicative only)' : ''}: \`${r.command}\``,
    '',
    `Machine: ${r.machine.cpus} × ${r.machine.cpuModel}, ${r.machine.memGb} GB, Linux ${r.machine.kernel}. ` +
      `Versions: node ${r.versions.node}, ${r.versions.java}, Kafka broker and Kafka Streams ${r.versions.kafkaBroker}, @confluentinc/kafka-javascript ${r.versions.confluentKafkaJavascript}, onceflow ${r.versions.onceflow}. ` +
      `Records per pipeline: ${Object.entries((r.settings.records ?? {}) as Record<string, number>).map(([p, n]) => `${p} ${n.toLocaleString('en-US')}`).join(', ')}.`,
    '',
    `![throughput and p99 per contender](results/${basename(svgFile)})`,
    '',
    renderTable(r),
    '',
    `Raw figures per run: [results/${basename(jsonFile)}](results/${basename(jsonFile)}).`,
    '',
    END,
  ].join('\n');
  writeFileSync(file, text.slice(0, a) + body + text.slice(b + END.length));
}
