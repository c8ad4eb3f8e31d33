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

export function modelFor(p: BenchPipeline): ExpectationModel {
  return p === 'filter-map' ? filterMapModel : pipelines[p].model;
}

/** The backlog every contender of a pipeline reads: the shared generators, so the models apply. */
export function inputFor(p: BenchPipeline, records: number, seed: number): InputRecord[] {
  if (p === 'word-count') return pipelines['word-count'].input({ records, seed, poison: 0 });
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
  const orderId = `${PROBE_PREFIX}-${run}-${i}`;
  const rand = prng(run * 100_003 + i);
  const value = JSON.stringify({ eventId: `${orderId}-e1`, orderId, customerId: `c${Math.floor(rand() * 200)}`, status: 'CREATED', version: 1, amount: 1 + Math.floor(rand() * 500), note: 'x'.repeat(40) });
  return { key: orderId, value };
}
