import type { IncomingRecord } from '../core/records.ts';
import { readTopic } from '../kafka/read-topic.ts';
import { LINEAGE, parseLineage, type Lineage } from '../core/headers.ts';

/**
 * What a pipeline should have produced, computed from its input alone. A model is a second,
 * independent implementation of the topology's meaning: the verifier never runs the worker's code.
 */
export interface ExpectationModel {
  readonly name: string;
  /** Ids (`topic/partition/offset`) of the input records that must lead to at least one record downstream. */
  expectedProducers(inputs: readonly IncomingRecord[]): Set<string>;
  /** The final value per output key (both as canonical strings), or undefined for pipelines without aggregates. */
  expectedFinal?(inputs: readonly IncomingRecord[]): Map<string, string>;
  /** Canonical key and value of an output record, to compare with expectedFinal; undefined leaves the record out of that comparison. */
  readOutput?(record: IncomingRecord): { key: string; value: string } | undefined;
  /** Invariants of the result topic beyond final values (e.g. a sequence without gaps): one line per violation, counted as mismatches. */
  checkOutputs?(outputs: readonly IncomingRecord[]): string[];
}

export interface VerifyOptions {
  readonly bootstrap: string;
  readonly inputTopic: string;
  /** Topics the worker writes with lineage: outputs and repartition topics. */
  readonly lineageTopics: readonly string[];
  /** The topic whose last record per key is the aggregate result. */
  readonly resultTopic?: string;
  readonly deadLetterTopic?: string;
  readonly model: ExpectationModel;
  /** Also read every topic read_uncommitted to count what a careless reader would have seen. */
  readonly countUncommitted?: boolean;
  readonly clientOptions?: Readonly<Record<string, string | number | boolean>>;
}

export interface VerifyReport {
  readonly ok: boolean;
  readonly model: string;
  readonly inputRecords: number;
  readonly outputRecords: number;
  /** Records whose lineage (source record + sequence number) was already seen in the same topic. */
  readonly duplicates: number;
  /** The duplicates per topic: the result topic and the intermediate (repartition) topics. */
  readonly duplicatesByTopic: Readonly<Record<string, number>>;
  /** Input records the model says must produce something downstream, with no record tracing back to them. */
  readonly lost: number;
  readonly aggregateMismatches: number;
  /** Output keys whose final value was compared with the model's (0 for pipelines without aggregates). */
  readonly aggregateKeys: number;
  readonly dlqRecords: number;
  readonly abortedSeenByReadUncommitted: number | undefined;
  readonly examples: { readonly duplicates: string[]; readonly lost: string[]; readonly mismatches: string[] };
}

const headerText = (r: IncomingRecord, key: string): string | undefined => {
  for (const h of r.headers) if (h.key === key) return h.value.toString();
  return undefined;
};

export const recordId = (r: { topic: string; partition: number; offset: number }): string => `${r.topic}/${r.partition}/${r.offset}`;

/** The source record an output stands for and its numbers at each hop (core/headers.ts); undefined for a record onceflow did not produce. */
export function lineageOf(r: IncomingRecord): Lineage | undefined {
  const value = r.lineage ?? headerText(r, LINEAGE.header);
  return value === undefined ? undefined : parseLineage(value);
}

/** Last value per key in offset order per partition: what a consumer of a changelog-like topic ends with. */
export function lastByKey(records: readonly IncomingRecord[], read: (r: IncomingRecord) => { key: string; value: string } | undefined): Map<string, string> {
  const sorted = [...records].sort((a, b) => a.partition - b.partition || a.offset - b.offset);
  const out = new Map<string, string>();
  for (const r of sorted) {
    const kv = read(r);
    if (kv !== undefined) out.set(kv.key, kv.value);
  }
  return out;
}

export async function verify(opts: VerifyOptions): Promise<VerifyReport> {
  const read = (topic: string, isolation: 'read_committed' | 'read_uncommitted') => readTopic(opts.bootstrap, topic, { isolation, clientOptions: opts.clientOptions ?? {} });
  const inputs = await read(opts.inputTopic, 'read_committed');
  const byTopic = new Map<string, IncomingRecord[]>();
  for (const t of opts.lineageTopics) byTopic.set(t, await read(t, 'read_committed'));

  let duplicates = 0;
  const duplicatesByTopic: Record<string, number> = {};
  const duplicateExamples: string[] = [];
  const produced = new Set<string>();
  let outputRecords = 0;
  for (const [topic, records] of byTopic) {
    const seen = new Set<string>();
    for (const r of records) {
      outputRecords++;
      const lineage = lineageOf(r);
      if (!lineage) continue;
      const id = `${lineage.source}#${lineage.seq}`;
      if (seen.has(id)) {
        duplicates++;
        duplicatesByTopic[topic] = (duplicatesByTopic[topic] ?? 0) + 1;
        if (duplicateExamples.length < 5) duplicateExamples.push(`${topic}: ${id} again at ${recordId(r)}`);
      }
      seen.add(id);
      produced.add(lineage.source);
    }
  }

  const dlq = opts.deadLetterTopic ? await read(opts.deadLetterTopic, 'read_committed') : [];
  for (const r of dlq) {
    const src = headerText(r, 'onceflow.source.topic');
    if (src !== undefined) produced.add(`${src}/${headerText(r, 'onceflow.source.partition')}/${headerText(r, 'onceflow.source.offset')}`);
  }

  const expected = opts.model.expectedProducers(inputs);
  const lostIds = [...expected].filter((id) => !produced.has(id));

  let aggregateMismatches = 0;
  let aggregateKeys = 0;
  const mismatchExamples: string[] = [];
  if (opts.model.expectedFinal && opts.model.readOutput && opts.resultTopic) {
    const want = opts.model.expectedFinal(inputs);
    const results = byTopic.get(opts.resultTopic) ?? (await read(opts.resultTopic, 'read_committed'));
    const got = lastByKey(results, opts.model.readOutput);
    for (const violation of opts.model.checkOutputs?.(results) ?? []) {
      aggregateMismatches++;
      if (mismatchExamples.length < 5) mismatchExamples.push(violation);
    }
    const keys = new Set([...want.keys(), ...got.keys()]);
    aggregateKeys = keys.size;
    for (const key of keys) {
      if (want.get(key) !== got.get(key)) {
        aggregateMismatches++;
        if (mismatchExamples.length < 5) mismatchExamples.push(`${key}: expected ${want.get(key) ?? '(none)'}, got ${got.get(key) ?? '(none)'}`);
      }
    }
  }

  let aborted: number | undefined;
  if (opts.countUncommitted) {
    aborted = 0;
    for (const [topic, committed] of byTopic) {
      const all = await read(topic, 'read_uncommitted');
      aborted += all.length - committed.length;
    }
  }

  return {
    ok: duplicates === 0 && lostIds.length === 0 && aggregateMismatches === 0,
    model: opts.model.name,
    inputRecords: inputs.length,
    outputRecords,
    duplicates,
    duplicatesByTopic,
    lost: lostIds.length,
    aggregateMismatches,
    aggregateKeys,
    dlqRecords: dlq.length,
    abortedSeenByReadUncommitted: aborted,
    examples: { duplicates: duplicateExamples, lost: lostIds.slice(0, 5), mismatches: mismatchExamples },
  };
}

export function formatReport(r: VerifyReport): string {
  const lines = [
    `verify (${r.model}): ${r.ok ? 'OK' : 'VIOLATIONS FOUND'}`,
    `  input records            ${r.inputRecords}`,
    `  output records           ${r.outputRecords}`,
    `  duplicates               ${r.duplicates}`,
    `  lost                     ${r.lost}`,
    `  aggregate keys compared  ${r.aggregateKeys}`,
    `  aggregate mismatches     ${r.aggregateMismatches}`,
    `  dead-lettered            ${r.dlqRecords}`,
  ];
  if (r.abortedSeenByReadUncommitted !== undefined) lines.push(`  aborted records a read_uncommitted reader sees: ${r.abortedSeenByReadUncommitted}`);
  for (const [what, list] of Object.entries(r.examples)) for (const e of list) lines.push(`  ${what}: ${e}`);
  return lines.join('\n');
}
