// What `describe` warns of output topics: a record onceflow writes carries the timestamp of the
// input record it came from (event time), and the broker deletes records older than a topic's
// retention.ms at its next retention check, whenever they were written. For a stateless pipeline
// that is the input's own age; for an aggregate's results it is easily missed: a backfill of last
// month writes last month's totals, which a 7-day output topic drops within minutes.
import type { CompiledTopology } from '../graph/compiled.ts';
import type { CompiledNode } from '../graph/types.ts';
import type { StoreKind } from '../state/store.ts';

/** Stores whose node emits results of many records (not the record itself, as dedupe and version guards do). */
const AGGREGATING: ReadonlySet<StoreKind> = new Set<StoreKind>(['key-value', 'window', 'session', 'suppress', 'join-window', 'versioned']);

export interface EventTimeOutput {
  readonly topic: string;
  readonly sink: string;
  /** The aggregating stores upstream of the sink whose results it writes. */
  readonly stores: readonly string[];
}

/** Each sink that writes results of aggregates, windows or joins, with those stores. */
export function eventTimeOutputs(c: CompiledTopology): EventTimeOutput[] {
  const writersOf = new Map<string, CompiledNode[]>();
  for (const n of c.nodes.values()) if (n.kind === 'repartitionSink') (writersOf.get(n.topic!) ?? writersOf.set(n.topic!, []).get(n.topic!)!).push(n);
  const out: EventTimeOutput[] = [];
  for (const sink of c.nodes.values()) {
    if (sink.kind !== 'sink') continue;
    const stores = new Set<string>();
    const seen = new Set<string>();
    const walk = (n: CompiledNode): void => {
      if (seen.has(n.name)) return;
      seen.add(n.name);
      for (const s of n.stores) if (AGGREGATING.has(c.stores.get(s)!.kind)) stores.add(s);
      const parents = n.kind === 'repartitionSource' ? (writersOf.get(n.topic!) ?? []) : n.parents.map((p) => c.nodes.get(p)!);
      for (const p of parents) walk(p);
    };
    walk(sink);
    if (stores.size > 0) out.push({ topic: sink.topic!, sink: sink.name, stores: [...stores] });
  }
  return out;
}

export function eventTimeOutputWarning(o: EventTimeOutput): string {
  return `output topic ${o.topic} (sink ${o.sink}) gets results of ${o.stores.join(', ')} stamped with their input's event time: records older than the topic's retention.ms are deleted by the broker at its next retention check, so a backfill's results can vanish after they are written. Give the topic a retention longer than the oldest input you may replay, or retention.ms=-1 (docs/operations.md#output-topics-and-event-time)`;
}
