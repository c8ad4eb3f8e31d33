import type { IncomingRecord } from '../core/records.ts';
import { ordersInput, prng, type InputRecord } from './orders-input.ts';
import { exampleTopology } from '../kafka/paths.ts';
import { recordId, type ExpectationModel } from './verify.ts';
import { sessionsInput, sessionsModel } from './sessions-pipeline.ts';
import { heartbeatsModel } from './heartbeats-pipeline.ts';
import { slidingModel } from './sliding-pipeline.ts';
import { foreignKeyInput, foreignKeyModel } from './foreign-key-pipeline.ts';
import { versionedEnrichmentInput, versionedEnrichmentModel } from './versioned-enrichment.ts';
import { segmentTotalsModel } from './segment-totals-model.ts';
import { enrichmentEvents } from './enrichment-input.ts';

/**
 * The example topologies the chaos harness, the demo and the benchmarks run, each with an
 * expectation model written from the topology's documented meaning, not from its code.
 */
export interface Pipeline {
  readonly name: PipelineName;
  readonly file: string;
  /** Environment that points the topology file at the run's topics. */
  env(input: string, output: string): Record<string, string>;
  /** `startAt`: where a pipeline whose records carry their own event time starts its clock (by default now). */
  input(opts: { records: number; seed: number; poison: number; startAt?: number }): InputRecord[];
  readonly model: ExpectationModel;
}

export type PipelineName = 'orders' | 'word-count' | 'enrichment' | 'sessions' | 'heartbeats' | 'sliding' | 'foreign-key' | 'enrichment-versioned';

interface OrderLike {
  eventId: string;
  orderId: string;
  customerId: string;
  status: string;
  version: number;
  amount: number;
}

function parseOrder(r: IncomingRecord): OrderLike | undefined {
  try {
    const v = JSON.parse(r.value?.toString() ?? 'null') as OrderLike | null;
    return v && typeof v.eventId === 'string' ? v : undefined;
  } catch {
    return undefined;
  }
}

/** Input in the order the worker sees it: per partition, by offset. */
function inPartitionOrder(inputs: readonly IncomingRecord[]): IncomingRecord[] {
  return [...inputs].sort((a, b) => a.partition - b.partition || a.offset - b.offset);
}

/**
 * topology/orders.ts: drop repeated event ids (dedupe, per input partition), keep an event only if
 * its version is newer than the last kept one of its order (version guard); a customer's total is
 * the sum of the amounts of its orders whose latest kept status is PAID.
 */
function ordersModel(): ExpectationModel {
  const run = (inputs: readonly IncomingRecord[]) => {
    const seen = new Set<string>();
    const version = new Map<string, number>();
    const firstSeen: IncomingRecord[] = [];
    const latest = new Map<string, OrderLike>();
    for (const r of inPartitionOrder(inputs)) {
      const o = parseOrder(r);
      if (!o) continue;
      if (seen.has(o.eventId)) continue;
      seen.add(o.eventId);
      firstSeen.push(r);
      if ((version.get(o.orderId) ?? -Infinity) >= o.version) continue;
      version.set(o.orderId, o.version);
      latest.set(o.orderId, o);
    }
    return { firstSeen, latest };
  };
  return {
    name: 'orders: dedupe → version guard → paid total per customer',
    expectedProducers: (inputs) => {
      // Every first occurrence of an event id is re-keyed by order id into the repartition topic.
      const ids = new Set(run(inputs).firstSeen.map(recordId));
      // A poison record must end in the dead-letter topic: it too must trace back.
      for (const r of inputs) if (!parseOrder(r)) ids.add(recordId(r));
      return ids;
    },
    expectedFinal: (inputs) => {
      const totals = new Map<string, number>();
      for (const o of run(inputs).latest.values()) totals.set(o.customerId, (totals.get(o.customerId) ?? 0) + (o.status === 'PAID' ? o.amount : 0));
      return new Map([...totals].map(([k, v]) => [k, String(v)]));
    },
    readOutput: (r) => ({ key: r.key?.toString() ?? '', value: String(JSON.parse(r.value?.toString() ?? 'null')) }),
  };
}

const WORDS = ['kafka', 'stream', 'exactly', 'once', 'offset', 'commit', 'abort', 'fence', 'epoch', 'replica', 'topic', 'partition', 'state', 'store', 'changelog', 'window'];

const splitWords = (line: string): string[] => line.toLowerCase().split(/[^\p{L}\p{N}']+/u).filter((w) => w.length > 0);

/** topology/word-count.ts: split lines into lower-case words, count each word. */
function wordCountModel(): ExpectationModel {
  return {
    name: 'word-count: split → re-key by word → count',
    expectedProducers: (inputs) => new Set(inputs.filter((r) => splitWords(r.value?.toString() ?? '').length > 0).map(recordId)),
    expectedFinal: (inputs) => {
      const counts = new Map<string, number>();
      for (const r of inputs) for (const w of splitWords(r.value?.toString() ?? '')) counts.set(w, (counts.get(w) ?? 0) + 1);
      return new Map([...counts].map(([k, v]) => [k, String(v)]));
    },
    readOutput: (r) => ({ key: r.key?.toString() ?? '', value: String(JSON.parse(r.value?.toString() ?? 'null')) }),
  };
}

interface EnrichmentEventLike {
  type: 'customer' | 'order';
  segment?: string;
  amount?: number;
}

function parseEnrichmentEvent(r: IncomingRecord): EnrichmentEventLike | undefined {
  try {
    const v = JSON.parse(r.value?.toString() ?? 'null') as EnrichmentEventLike | null;
    return v && (v.type === 'customer' || v.type === 'order') ? v : undefined;
  } catch {
    return undefined;
  }
}

/**
 * topology/enrichment-events.ts: customer updates and orders in one topic keyed by customer id. An
 * order joins the segment of the last customer update before it in its partition (none: no result);
 * the total per segment is the sum of the joined orders' amounts.
 */
function enrichmentModel(): ExpectationModel {
  const run = (inputs: readonly IncomingRecord[]) => {
    const segmentOf = new Map<string, string>();
    const joined: IncomingRecord[] = [];
    const totals = new Map<string, number>();
    for (const r of inPartitionOrder(inputs)) {
      const e = parseEnrichmentEvent(r);
      const customerId = r.key?.toString() ?? '';
      if (!e) continue;
      if (e.type === 'customer') {
        segmentOf.set(customerId, e.segment ?? '');
        continue;
      }
      const segment = segmentOf.get(customerId);
      if (segment === undefined) continue;
      joined.push(r);
      totals.set(segment, (totals.get(segment) ?? 0) + (e.amount ?? 0));
    }
    return { joined, totals };
  };
  return segmentTotalsModel('enrichment: customer updates → table; orders join it → total per segment', (r) => parseEnrichmentEvent(r) !== undefined, run);
}

/** Customer updates interleaved with orders, keyed by customer id; some orders come before their customer's first update. */
function enrichmentInput({ records, seed, poison }: { records: number; seed: number; poison: number }): InputRecord[] {
  return enrichmentEvents({ records, seed, poison, updateShare: 0.1 });
}

export const pipelines: Record<PipelineName, Pipeline> = {
  sessions: {
    name: 'sessions',
    file: exampleTopology('sessions'),
    env: (input, output) => ({ ONCEFLOW_SESSIONS_INPUT: input, ONCEFLOW_SESSIONS_OUTPUT: output }),
    input: sessionsInput,
    model: sessionsModel(),
  },
  heartbeats: {
    name: 'heartbeats',
    file: exampleTopology('heartbeats'),
    env: (input, output) => ({ ONCEFLOW_HEARTBEATS_INPUT: input, ONCEFLOW_HEARTBEATS_OUTPUT: output }),
    input: sessionsInput,
    model: heartbeatsModel(),
  },
  enrichment: {
    name: 'enrichment',
    file: exampleTopology('enrichment-events'),
    env: (input, output) => ({ ONCEFLOW_ENRICH_EVENTS_INPUT: input, ONCEFLOW_ENRICH_EVENTS_OUTPUT: output }),
    input: enrichmentInput,
    model: enrichmentModel(),
  },
  orders: {
    name: 'orders',
    file: exampleTopology('orders'),
    env: (input, output) => ({ ONCEFLOW_ORDERS_INPUT: input, ONCEFLOW_ORDERS_OUTPUT: output }),
    input: ({ records, seed, poison }) => ordersInput({ records, seed, poison }),
    model: ordersModel(),
  },
  'word-count': {
    name: 'word-count',
    file: exampleTopology('word-count'),
    env: (input, output) => ({ ONCEFLOW_WORDS_INPUT: input, ONCEFLOW_WORDS_OUTPUT: output }),
    input: ({ records, seed }) => {
      const rand = prng(seed);
      return Array.from({ length: records }, (_, i) => ({
        key: `line-${i}`,
        value: Array.from({ length: 3 + Math.floor(rand() * 8) }, () => WORDS[Math.floor(rand() * WORDS.length)]).join(' '),
      }));
    },
    model: wordCountModel(),
  },
  sliding: {
    name: 'sliding',
    file: 'topology/click-bursts.ts',
    env: (input, output) => ({ ONCEFLOW_BURSTS_INPUT: input, ONCEFLOW_BURSTS_OUTPUT: output }),
    input: sessionsInput,
    model: slidingModel(),
  },
  'foreign-key': {
    name: 'foreign-key',
    file: 'topology/order-customer-events.ts',
    env: (input, output) => ({ ONCEFLOW_FK_EVENTS_INPUT: input, ONCEFLOW_FK_EVENTS_OUTPUT: output }),
    input: foreignKeyInput,
    model: foreignKeyModel(),
  },
  'enrichment-versioned': {
    name: 'enrichment-versioned',
    file: 'topology/enrichment-versioned.ts',
    env: (input, output) => ({ ONCEFLOW_ENRICH_VERSIONED_INPUT: input, ONCEFLOW_ENRICH_VERSIONED_OUTPUT: output }),
    input: versionedEnrichmentInput,
    model: versionedEnrichmentModel(),
  },
};
