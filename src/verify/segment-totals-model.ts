import type { IncomingRecord } from '../core/records.ts';
import { recordId, type ExpectationModel } from './verify.ts';

/** What an enrichment model computes from the input: the input records whose processing sends a joined order on, and the amounts per segment. */
export interface SegmentTotals {
  readonly joined: readonly IncomingRecord[];
  readonly totals: ReadonlyMap<string, number>;
}

/**
 * The expectations of an enrichment pipeline (orders joined with customers, summed per segment): every
 * joined order is re-keyed by segment into a repartition topic, a record that is not an event
 * (`isEvent` false: poison) is dead-lettered, and each segment's last total is the model's.
 */
export function segmentTotalsModel(name: string, isEvent: (r: IncomingRecord) => boolean, run: (inputs: readonly IncomingRecord[]) => SegmentTotals): ExpectationModel {
  return {
    name,
    expectedProducers: (inputs) => {
      const ids = new Set(run(inputs).joined.map(recordId));
      for (const r of inputs) if (!isEvent(r)) ids.add(recordId(r));
      return ids;
    },
    expectedFinal: (inputs) => new Map([...run(inputs).totals].map(([k, v]) => [k, String(v)])),
    readOutput: (r) => ({ key: r.key?.toString() ?? '', value: String(JSON.parse(r.value?.toString() ?? 'null')) }),
  };
}
