import type { IncomingRecord } from '../../src/core/records.ts';
import { pipelines } from '../../src/verify/pipelines.ts';
import { recordId, type ExpectationModel } from '../../src/verify/verify.ts';
import { ordersInput, prng, type InputRecord } from '../../src/verify/orders-input.ts';
import type { BenchPipeline } from './contenders.ts';

/** bench/topologies/filter-map.ts: every order that is not CANCELLED leads to exactly one output. */
export const filterMapModel: ExpectationModel = {
  name: 'filter-map: status != CANCELLED → one output each',
  expectedProducers: (inputs: readonly IncomingRecord[]) => {
    const ids = new Set<string>();
    for (const r of inputs) {
      try {
        const o = JSON.parse(r.value?.toString() ?? 'null') as { status?: string } | null;
        if (o && o.status !== 'CANCELLED') ids.add(recordId(r));
      } catch {
        /* not JSON: dead-lettered, not an output */
      }
    }
    return ids;
  },
};

const parseJson = <T>(r: IncomingRecord): T | undefined => {
  try {
    return (JSON.parse(r.value?.toString() ?? 'null') as T | null) ?? undefined;
  } catch {
    return undefined;
  }
};

const readNumberOutput = (r: IncomingRecord) => ({ key: r.key?.toString() ?? '', value: String(JSON.parse(r.value?.toString() ?? 'null')) });

/** Counts as final values, as canonical strings. */
const asStrings = (counts: Map<string, number>) => new Map([...counts].map(([k, v]) => [k, String(v)]));

const docWords = (r: IncomingRecord): string[] => {
  const text = parseJson<{ text?: string }>(r)?.text;
  return typeof text === 'string' ? text.toLowerCase().split(/[^\p{L}\p{N}']+/u).filter((w) => w.length > 0) : [];
};

/** bench/topologies/word-count-8x1000.ts: every word of every document's text, counted. */
export const wordCount8x1000Model: ExpectationModel = {
  name: 'word-count-8x1000: words of the text field → re-key by word → count',
  expectedProducers: (inputs) => new Set(inputs.filter((r) => docWords(r).length > 0).map(recordId)),
  expectedFinal: (inputs) => {
    const counts = new Map<string, number>();
    for (const r of inputs) for (const w of docWords(r)) counts.set(w, (counts.get(w) ?? 0) + 1);
    return asStrings(counts);
  },
  readOutput: readNumberOutput,
};

/** bench/topologies/customer-sum.ts: the amounts of every PAID event, summed per customer. */
export const customerSumModel: ExpectationModel = {
  name: 'customer-sum: status == PAID → re-key by customer → sum of amounts',
  expectedProducers: (inputs) => new Set(inputs.filter((r) => parseJson<{ status?: string }>(r)?.status === 'PAID').map(recordId)),
  expectedFinal: (inputs) => {
    const sums = new Map<string, number>();
    for (const r of inputs) {
      const o = parseJson<{ status?: string; customerId?: string; amount?: number }>(r);
      if (o?.status === 'PAID' && o.customerId !== undefined) sums.set(o.customerId, (sums.get(o.customerId) ?? 0) + (o.amount ?? 0));
    }
    return asStrings(sums);
  },
  readOutput: readNumberOutput,
};

export function modelFor(p: BenchPipeline): ExpectationModel {
  switch (p) {
    case 'filter-map':
      return filterMapModel;
    case 'word-count-8x1000':
      return wordCount8x1000Model;
    case 'customer-sum':
      return customerSumModel;
    default:
      return pipelines[p].model;
  }
}

/** 1,000 made-up words of 2–4 syllables, the same on every run. */
export const VOCABULARY: readonly string[] = (() => {
  const rand = prng(1000);
  const onsets = ['b', 'c', 'd', 'f', 'g', 'k', 'l', 'm', 'n', 'p', 'r', 's', 't', 'v', 'z', 'br', 'st', 'tr'];
  const vowels = ['a', 'e', 'i', 'o', 'u', 'ai', 'ou'];
  const words = new Set<string>();
  while (words.size < 1000) {
    let w = '';
    for (let s = 2 + Math.floor(rand() * 3); s > 0; s--) w += onsets[Math.floor(rand() * onsets.length)]! + vowels[Math.floor(rand() * vowels.length)]!;
    words.add(w);
  }
  return [...words];
})();

/** ~200-byte JSON documents, 8 vocabulary words each in `text`. */
function docsInput(records: number, seed: number): InputRecord[] {
  const rand = prng(seed);
  return Array.from({ length: records }, (_, i) => {
    const words = Array.from({ length: 8 }, () => VOCABULARY[Math.floor(rand() * VOCABULARY.length)]!);
    const doc = { id: `doc-${seed}-${i}`, user: `u${Math.floor(rand() * 5000)}`, lang: 'en', text: words.join(' '), note: 'y'.repeat(60) };
    return { key: doc.id, value: JSON.stringify(doc) };
  });
}

/** The backlog every contender of a pipeline reads: the shared generators, so the models apply. */
export function inputFor(p: BenchPipeline, records: number, seed: number): InputRecord[] {
  if (p === 'word-count') return pipelines['word-count'].input({ records, seed, poison: 0 });
  if (p === 'word-count-8x1000') return docsInput(records, seed);
  return ordersInput({ records, seed });
}

/** Word-count keys and order ids the probes use: left out when comparing results across contenders. */
export const PROBE_PREFIX = 'probe';

/**
 * Records produced after the backlog, one at a time at a low rate, to measure latency. They are
 * built not to change any aggregate the contenders are compared on: a CREATED event of a fresh order
 * leaves a customer's paid total as it is (but still emits it), a probe word is its own key.
 */
export function probeRecord(p: BenchPipeline, run: number, i: number): InputRecord {
  if (p === 'word-count') return { key: `${PROBE_PREFIX}-${run}-${i}`, value: `${PROBE_PREFIX}${run}` };
  if (p === 'word-count-8x1000') return { key: `${PROBE_PREFIX}-${run}-${i}`, value: JSON.stringify({ id: `${PROBE_PREFIX}-${run}-${i}`, text: `${PROBE_PREFIX}${run}` }) };
  const orderId = `${PROBE_PREFIX}-${run}-${i}`;
  const rand = prng(run * 100_003 + i);
  // customer-sum keeps only PAID events: its probe is the PAID event of a customer of its own.
  const [customerId, status] = p === 'customer-sum' ? [`${PROBE_PREFIX}-${run}-${i}`, 'PAID'] : [`c${Math.floor(rand() * 200)}`, 'CREATED'];
  const value = JSON.stringify({ eventId: `${orderId}-e1`, orderId, customerId, status, version: 1, amount: 1 + Math.floor(rand() * 500), note: 'x'.repeat(40) });
  return { key: orderId, value };
}
