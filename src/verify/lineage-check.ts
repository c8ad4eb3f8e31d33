import type { IncomingRecord } from '../core/records.ts';
import { GroupOffsets } from '../kafka/group-offsets.ts';
import { readTopic } from '../kafka/read-topic.ts';
import { lastByKey, lineageOf, recordId, type ExpectationModel } from './verify.ts';

/**
 * Verification of any topology from its lineage headers alone (core/headers.ts): a record's outputs at
 * each hop are numbered 0, 1, ... (results a record cache released: c0, c1, ...) across every topic it
 * writes, so without knowing what the topology means the verifier can still tell
 * - a duplicate: one lineage twice, in any of the topology's topics;
 * - an orphan: an output whose parent (the input record, or the repartition record of the hop before)
 *   was never committed;
 * - a gap: a number missing among a parent's outputs, an output lost while its siblings landed.
 * An input record with no output at all may have been filtered: only a model (`model`) says it must
 * produce something, and what the aggregates must end at.
 */
export interface TopologyVerifyOptions {
  readonly bootstrap: string;
  readonly groupId: string;
  readonly sourceTopics: readonly string[];
  readonly repartitionTopics: readonly string[];
  readonly outputTopics: readonly string[];
  readonly deadLetterTopic?: string;
  readonly model?: ExpectationModel;
  /** The output whose last record per key the model's expectedFinal is compared with. */
  readonly resultTopic?: string;
  readonly clientOptions?: Readonly<Record<string, string | number | boolean>>;
}

export interface TopologyVerifyReport {
  readonly ok: boolean;
  readonly model: string | undefined;
  readonly inputRecords: number;
  /** Records of source and repartition topics past the group's committed offset: the application has not processed them yet. */
  readonly unprocessed: number;
  readonly outputRecords: number;
  readonly duplicates: number;
  readonly orphans: number;
  readonly gaps: number;
  /** Processed input records nothing traces back to (filtered, or lost: only a model tells). */
  readonly inputsWithoutOutput: number;
  readonly dlqRecords: number;
  /** With a model: input records it says must lead somewhere, with nothing tracing back to them. */
  readonly lost: number;
  readonly aggregateKeys: number;
  readonly aggregateMismatches: number;
  readonly examples: { readonly duplicates: string[]; readonly orphans: string[]; readonly gaps: string[]; readonly lost: string[]; readonly mismatches: string[] };
}

const EXAMPLES = 5;
const note = (list: string[], text: string): void => void (list.length < EXAMPLES && list.push(text));

/** The parent of a lineage id: the hop before (`src#0.1` → `src#0`), or the input record itself (`src#0` → `src`). */
function parentOf(source: string, seq: string): string {
  const dot = seq.lastIndexOf('.');
  return dot < 0 ? source : `${source}#${seq.slice(0, dot)}`;
}

/** Missing numbers in each series (own outputs `n`, released results `cn`) of one parent's outputs. */
function missingNumbers(numbers: readonly string[]): string[] {
  const missing: string[] = [];
  for (const prefix of ['', 'c']) {
    const taken = new Set(numbers.filter((n) => (prefix === '' ? /^\d+$/.test(n) : n.startsWith('c'))).map((n) => Number(n.slice(prefix.length))));
    const top = Math.max(-1, ...taken);
    for (let i = 0; i < top; i++) if (!taken.has(i)) missing.push(`${prefix}${i}`);
  }
  return missing;
}

export async function verifyTopology(opts: TopologyVerifyOptions): Promise<TopologyVerifyReport> {
  const read = (topic: string) => readTopic(opts.bootstrap, topic, { isolation: 'read_committed', clientOptions: opts.clientOptions ?? {} });
  const inputs: IncomingRecord[] = [];
  for (const t of opts.sourceTopics) inputs.push(...(await read(t)));
  const byTopic = new Map<string, IncomingRecord[]>();
  for (const t of [...opts.repartitionTopics, ...opts.outputTopics, ...(opts.deadLetterTopic ? [opts.deadLetterTopic] : [])]) byTopic.set(t, await read(t));
  const repartitioned = [...opts.repartitionTopics].flatMap((t) => byTopic.get(t) ?? []);

  const examples = { duplicates: [] as string[], orphans: [] as string[], gaps: [] as string[], lost: [] as string[], mismatches: [] as string[] };

  const unprocessed = await countUnprocessed(opts, [...inputs, ...repartitioned]);

  const inputIds = new Set(inputs.map(recordId));
  const repartitionIds = new Set<string>();
  for (const r of repartitioned) {
    const l = lineageOf(r);
    if (l) repartitionIds.add(`${l.source}#${l.seq}`);
  }
  const sourceTopics = new Set(opts.sourceTopics);
  const seen = new Set<string>();
  const children = new Map<string, string[]>();
  const traced = new Set<string>();
  let duplicates = 0;
  let orphans = 0;
  let outputRecords = 0;
  for (const [topic, records] of byTopic) {
    for (const r of records) {
      if (topic !== opts.deadLetterTopic) outputRecords++;
      const l = lineageOf(r);
      if (!l) continue;
      const id = `${l.source}#${l.seq}`;
      if (seen.has(id)) {
        duplicates++;
        note(examples.duplicates, `${topic}: ${id} again at ${recordId(r)}`);
        continue;
      }
      seen.add(id);
      traced.add(l.source);
      const parent = parentOf(l.source, l.seq);
      // An input that itself came from an upstream onceflow application carries that one's lineage: not checkable here.
      const fromThisRun = sourceTopics.has(l.source.split('/')[0] ?? '');
      if (fromThisRun && !(parent === l.source ? inputIds.has(parent) : repartitionIds.has(parent))) {
        orphans++;
        note(examples.orphans, `${topic}: ${id} at ${recordId(r)}, but its parent ${parent} was never committed`);
      }
      const last = l.seq.slice(l.seq.lastIndexOf('.') + 1);
      const siblings = children.get(parent);
      if (siblings) siblings.push(last);
      else children.set(parent, [last]);
    }
  }
  let gaps = 0;
  for (const [parent, numbers] of children) {
    const missing = missingNumbers(numbers);
    gaps += missing.length;
    for (const m of missing) note(examples.gaps, `${parent}: output ${m} missing (outputs ${[...numbers].sort().join(', ')} landed)`);
  }
  const inputsWithoutOutput = inputs.filter((r) => !traced.has(recordId(r))).length - unprocessed.inputs;

  let lost = 0;
  let aggregateKeys = 0;
  let aggregateMismatches = 0;
  if (opts.model) {
    for (const id of opts.model.expectedProducers(inputs)) {
      if (traced.has(id)) continue;
      lost++;
      note(examples.lost, id);
    }
    const resultTopic = opts.resultTopic ?? (opts.outputTopics.length === 1 ? opts.outputTopics[0] : undefined);
    if (opts.model.expectedFinal && opts.model.readOutput && resultTopic) {
      const want = opts.model.expectedFinal(inputs);
      const got = lastByKey(byTopic.get(resultTopic) ?? [], opts.model.readOutput);
      const keys = new Set([...want.keys(), ...got.keys()]);
      aggregateKeys = keys.size;
      for (const key of keys) {
        if (want.get(key) === got.get(key)) continue;
        aggregateMismatches++;
        note(examples.mismatches, `${key}: expected ${want.get(key) ?? '(none)'}, got ${got.get(key) ?? '(none)'}`);
      }
    }
  }

  return {
    ok: unprocessed.all === 0 && duplicates === 0 && orphans === 0 && gaps === 0 && lost === 0 && aggregateMismatches === 0,
    model: opts.model?.name,
    inputRecords: inputs.length,
    unprocessed: unprocessed.all,
    outputRecords,
    duplicates,
    orphans,
    gaps,
    inputsWithoutOutput: Math.max(0, inputsWithoutOutput),
    dlqRecords: opts.deadLetterTopic ? (byTopic.get(opts.deadLetterTopic)?.length ?? 0) : 0,
    lost,
    aggregateKeys,
    aggregateMismatches,
    examples,
  };
}

/** Records at or past the group's committed offset of their partition. */
async function countUnprocessed(opts: TopologyVerifyOptions, records: readonly IncomingRecord[]): Promise<{ all: number; inputs: number }> {
  const partitions = new Map<string, { topic: string; partition: number }>();
  for (const r of records) partitions.set(`${r.topic}/${r.partition}`, { topic: r.topic, partition: r.partition });
  const group = new GroupOffsets(opts.bootstrap, opts.groupId, opts.clientOptions ?? {});
  let committed: Map<string, number>;
  try {
    committed = new Map((await group.fetch([...partitions.values()])).map((o) => [`${o.topic}/${o.partition}`, o.offset]));
  } finally {
    await group.close();
  }
  const sources = new Set(opts.sourceTopics);
  let all = 0;
  let inputs = 0;
  for (const r of records) {
    if (r.offset < (committed.get(`${r.topic}/${r.partition}`) ?? -1)) continue;
    all++;
    if (sources.has(r.topic)) inputs++;
  }
  return { all, inputs };
}

export function formatTopologyReport(r: TopologyVerifyReport): string {
  const lines = [
    `verify (${r.model ?? 'lineage only: no model'}): ${r.ok ? 'OK' : r.unprocessed > 0 && r.duplicates + r.orphans + r.gaps + r.lost + r.aggregateMismatches === 0 ? 'NOT DONE YET' : 'VIOLATIONS FOUND'}`,
    `  input records            ${r.inputRecords}`,
    `  not processed yet        ${r.unprocessed}`,
    `  output records           ${r.outputRecords}`,
    `  duplicates               ${r.duplicates}`,
    `  orphans                  ${r.orphans}`,
    `  gaps                     ${r.gaps}`,
    `  inputs without output    ${r.inputsWithoutOutput}${r.model ? '' : ' (filtered, or lost: pass --model to tell)'}`,
    `  dead-lettered            ${r.dlqRecords}`,
  ];
  if (r.model) lines.push(`  lost                     ${r.lost}`, `  aggregate keys compared  ${r.aggregateKeys}`, `  aggregate mismatches     ${r.aggregateMismatches}`);
  for (const [what, list] of Object.entries(r.examples)) for (const e of list) lines.push(`  ${what}: ${e}`);
  return lines.join('\n');
}
