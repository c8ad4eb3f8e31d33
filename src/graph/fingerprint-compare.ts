// Compares the fingerprint a running (or last-run) version recorded with the next version's, and
// classifies each difference by what starting the next version on the recorded state would do.
import type { RepartitionTopicFingerprint, SerdeIdentity, SourceFingerprint, StoreFingerprint, TopologyFingerprint } from './fingerprint.ts';

/**
 * - compatible: the next version runs on the existing state and topics as they are.
 * - state-resetting: a store's existing state cannot carry over (or, new, it cannot cover the input
 *   already consumed); starting it empty is correct, and nothing else is lost.
 * - breaking: the existing state or records in flight would be read wrongly, orphaned or land on
 *   other tasks, and the new version would write wrong results without an error.
 */
export type ChangeClass = 'compatible' | 'state-resetting' | 'breaking';

export interface TopologyChange {
  readonly classification: ChangeClass;
  /** What changed, in a few words: `store counts renamed to totals`. */
  readonly what: string;
  /** Why it is classified so, and what to do. */
  readonly reason: string;
  /** The store whose `--reset-state` resolves it; absent (for a non-compatible change): only a new application id does. */
  readonly store?: string;
  /** A renamed store's former name: `--reset-state` with it resolves the change too (and drops its orphaned changelog). */
  readonly formerStore?: string;
  /** The former store's changelog topic, for a renamed store. */
  readonly formerChangelog?: string;
}

const sameSerde = (a: SerdeIdentity, b: SerdeIdentity): boolean => a.name === b.name && a.schemaHash === b.schemaHash;
const showSerde = (s: SerdeIdentity): string => (s.schemaHash === undefined ? s.name : `${s.name} (schema ${s.schemaHash.slice(0, 12)})`);
const RESET = (store: string): string => `start with --reset-state ${store} (its state is dropped) or under a new application id`;

/** Pairs removed and added entries of the same kind in order: a rename, or a generated name that shifted. */
function pairRenames<T>(removed: readonly T[], added: readonly T[], sameKind: (a: T, b: T) => boolean): { pairs: [T, T][]; removed: T[]; added: T[] } {
  const left = [...added];
  const pairs: [T, T][] = [];
  const unpaired: T[] = [];
  for (const old of removed) {
    const at = left.findIndex((n) => sameKind(old, n));
    if (at < 0) unpaired.push(old);
    else pairs.push([old, left.splice(at, 1)[0]!]);
  }
  return { pairs, removed: unpaired, added: left };
}

function renamedStore(old: StoreFingerprint, next: StoreFingerprint): TopologyChange {
  const shifted = !old.named && !next.named;
  const why = shifted
    ? `its name is generated from the stage's position, and a stage added or removed before stage ${next.stage} shifted it`
    : `the store of stage ${next.stage} (${next.stageKind}) has a new name`;
  return {
    classification: 'breaking',
    what: `store ${old.name} renamed to ${next.name}`,
    reason: `${why}: ${next.name} would start empty while ${old.name}'s state (changelog ${old.changelogTopic}) is orphaned, and its aggregates would be wrong with no error. Keep the old name (${next.named ? 'the store option' : `name the stage: { name: '${old.name}' } or { store: '${old.name}' }`}), or ${RESET(next.name)}`,
    store: next.name,
    formerStore: old.name,
    formerChangelog: old.changelogTopic,
  };
}

function changedStore(old: StoreFingerprint, next: StoreFingerprint): TopologyChange[] {
  const out: TopologyChange[] = [];
  for (const role of ['key', 'value'] as const) {
    if (sameSerde(old[role], next[role])) continue;
    out.push({
      classification: 'breaking',
      what: `store ${next.name}: ${role} serde ${showSerde(old[role])} -> ${showSerde(next[role])}`,
      reason: `its state and changelog hold ${role}s in the old encoding, which the new serde would fail to read or read wrongly; ${RESET(next.name)}`,
      store: next.name,
    });
  }
  if (old.kind !== next.kind || old.layout !== next.layout) {
    out.push({
      classification: 'state-resetting',
      what: `store ${next.name}: ${old.kind}${old.layout === '' ? '' : ` ${old.layout}`} -> ${next.kind}${next.layout === '' ? '' : ` ${next.layout}`}`,
      reason: `its entries were laid out for the old windows or kind and mean something else under the new ones; ${RESET(next.name)}`,
      store: next.name,
    });
  }
  return out;
}

function newStore(store: StoreFingerprint, recorded: TopologyFingerprint, next: TopologyFingerprint): TopologyChange {
  const known = new Set([...recorded.sources.map((s) => s.topic), ...recorded.repartitionTopics.map((t) => t.name)]);
  const inputsOf = (subtopology: number): readonly string[] => next.subtopologies.find((s) => s.id === subtopology)?.sourceTopics ?? [];
  // A topic no running version read is read from its beginning; a new repartition topic only carries what its writer reads.
  const fresh = (topic: string, depth: number): boolean => {
    if (known.has(topic)) return false;
    const writer = next.repartitionTopics.find((t) => t.name === topic)?.writer;
    return writer === undefined || (depth < next.subtopologies.length && inputsOf(writer).every((t) => fresh(t, depth + 1)));
  };
  const inputs = inputsOf(store.subtopology);
  if (inputs.every((t) => fresh(t, 0))) return { classification: 'compatible', what: `store ${store.name} added`, reason: `it is computed from topics the running version does not read (${inputs.join(', ')}), from their beginning` };
  return {
    classification: 'state-resetting',
    what: `store ${store.name} added (stage ${store.stage}, ${store.stageKind})`,
    reason: `it starts empty on input the running version has consumed already: its results cover only records from this start on. Acknowledge with --reset-state ${store.name}, or start under a new application id to compute it from the beginning`,
    store: store.name,
  };
}

function repartitionChanges(old: RepartitionTopicFingerprint, next: RepartitionTopicFingerprint, storesOf: (subtopology: number) => readonly string[]): TopologyChange[] {
  const out: TopologyChange[] = [];
  const store = storesOf(next.subtopology).find((s) => next.name.endsWith(`-${s}-repartition`));
  if (old.keyDerivation !== next.keyDerivation) {
    out.push({
      classification: 'breaking',
      what: `repartition topic ${next.name}: key derivation ${old.keyDerivation} -> ${next.keyDerivation}`,
      reason: `a key-changing function before it (groupBy, selectKey, map) has new source text: the ${store === undefined ? 'stage reading it' : `store ${store}`} holds ${store === undefined ? 'records' : 'state'} under the old keys and would mix them with the new ones; ${store === undefined ? 'start under a new application id' : RESET(store)}`,
      ...(store === undefined ? {} : { store }),
    });
  }
  for (const role of ['key', 'value'] as const) {
    if (sameSerde(old[role], next[role])) continue;
    out.push({
      classification: 'breaking',
      what: `repartition topic ${next.name}: ${role} serde ${showSerde(old[role])} -> ${showSerde(next[role])}`,
      reason: 'records in flight in the topic were written in the old encoding; drain it (stop the producers of the input, let the running version catch up) or start under a new application id',
    });
  }
  return out;
}

function partitionChange(what: string, subtopology: number | undefined, storesOf: (subtopology: number) => readonly string[], internal: boolean): TopologyChange[] {
  const stores = subtopology === undefined ? [] : storesOf(subtopology);
  if (stores.length === 0) return [{ classification: 'compatible', what, reason: 'the sub-topology reading it keeps no state: a key moving to another task carries nothing with it' }];
  if (internal) return [{ classification: 'breaking', what, reason: `keys move to other tasks while the stores ${stores.join(', ')} hold them where they were, and the existing internal topic keeps its old count: start under a new application id (or \`onceflow reset\`)` }];
  return stores.map((store) => ({ classification: 'breaking' as const, what: `${what} (store ${store})`, reason: `its keys move to other tasks while store ${store} holds their state in the old ones; ${RESET(store)}`, store }));
}

/** Every difference between the recorded fingerprint and the next one, classified. */
export function compareFingerprints(recorded: TopologyFingerprint, next: TopologyFingerprint): TopologyChange[] {
  const out: TopologyChange[] = [];
  const storesOf = (subtopology: number): readonly string[] => next.stores.filter((s) => s.subtopology === subtopology).map((s) => s.name);
  const oldStores = new Map(recorded.stores.map((s) => [s.name, s] as const));
  const newStores = new Map(next.stores.map((s) => [s.name, s] as const));
  const renames = pairRenames(
    recorded.stores.filter((s) => !newStores.has(s.name)),
    next.stores.filter((s) => !oldStores.has(s.name)),
    (a, b) => a.kind === b.kind && a.stageKind === b.stageKind,
  );
  for (const [old, renamed] of renames.pairs) out.push(renamedStore(old, renamed), ...changedStore({ ...old, name: renamed.name }, renamed).filter((c) => c.classification === 'breaking'));
  for (const old of renames.removed) out.push({ classification: 'compatible', what: `store ${old.name} removed`, reason: `nothing reads it any more; its changelog ${old.changelogTopic} stays on the cluster until deleted` });
  for (const added of renames.added) out.push(newStore(added, recorded, next));
  for (const store of next.stores) {
    const old = oldStores.get(store.name);
    if (old !== undefined) out.push(...changedStore(old, store));
  }

  const renamedStoreNames = new Set(renames.pairs.map(([, b]) => b.name));
  const oldTopics = new Map(recorded.repartitionTopics.map((t) => [t.name, t] as const));
  const newTopics = new Set(next.repartitionTopics.map((t) => t.name));
  for (const topic of next.repartitionTopics) {
    const old = oldTopics.get(topic.name);
    if (old !== undefined) {
      out.push(...repartitionChanges(old, topic, storesOf));
      if (old.partitions !== undefined && topic.partitions !== undefined && old.partitions !== topic.partitions) out.push(...partitionChange(`repartition topic ${topic.name}: ${old.partitions} -> ${topic.partitions} partitions`, topic.subtopology, storesOf, true));
    } else if (!storesOf(topic.subtopology).some((s) => renamedStoreNames.has(s) && topic.name.endsWith(`-${s}-repartition`))) {
      out.push({ classification: 'compatible', what: `repartition topic ${topic.name} added`, reason: 'a new internal topic, created at start' });
    }
  }
  for (const old of recorded.repartitionTopics) {
    if (newTopics.has(old.name)) continue;
    const why = `records still in it when the running version stops are never read (${old.named ? 'it was removed or renamed' : 'its generated name shifted'})`;
    // A renamed store's own topic goes with it: resetting the store accepts that what was in flight to it is dropped too.
    const renamed = renames.pairs.find(([former]) => old.name.endsWith(`-${former.name}-repartition`));
    if (renamed !== undefined) {
      const [former, store] = renamed;
      out.push({ classification: 'breaking', what: `repartition topic ${old.name} no longer used`, reason: `${why}; they go with store ${former.name}'s state: ${RESET(store.name)}`, store: store.name, formerStore: former.name });
    } else {
      out.push({ classification: 'breaking', what: `repartition topic ${old.name} no longer used`, reason: `${why}; drain it first (stop the input, let the running version catch up) or start under a new application id` });
    }
  }

  const oldSources = new Map(recorded.sources.map((s) => [s.topic, s] as const));
  for (const source of next.sources) {
    const old: SourceFingerprint | undefined = oldSources.get(source.topic);
    if (old === undefined) out.push({ classification: 'compatible', what: `source ${source.topic} added`, reason: 'read from its beginning' });
    else if (old.partitions !== undefined && source.partitions !== undefined && old.partitions !== source.partitions) out.push(...partitionChange(`source ${source.topic}: ${old.partitions} -> ${source.partitions} partitions`, source.subtopology, storesOf, false));
  }
  for (const old of recorded.sources) if (!next.sources.some((s) => s.topic === old.topic)) out.push({ classification: 'compatible', what: `source ${old.topic} removed`, reason: 'no longer read; its committed offsets stay in the group' });
  for (const sink of next.sinks) if (!recorded.sinks.includes(sink)) out.push({ classification: 'compatible', what: `sink ${sink} added`, reason: 'a new output' });
  for (const sink of recorded.sinks) if (!next.sinks.includes(sink)) out.push({ classification: 'compatible', what: `sink ${sink} removed`, reason: 'no longer written' });

  const oldSubs = new Map(recorded.subtopologies.map((s) => [s.sourceTopics.join(','), s] as const));
  for (const sub of next.subtopologies) {
    const old = oldSubs.get(sub.sourceTopics.join(','));
    if (old !== undefined && old.stagesHash !== sub.stagesHash) out.push({ classification: 'compatible', what: `sub-topology ${sub.id} (${sub.sourceTopics.join(', ')}): stages changed`, reason: 'what it computes changed but no store, internal topic or key derivation did: the new version continues from the committed offsets and state' });
  }
  return out;
}

/** Changes the given `--reset-state` stores do not resolve: non-compatible ones naming no store among them. */
export function unresolvedChanges(changes: readonly TopologyChange[], resetStores: ReadonlySet<string>): TopologyChange[] {
  return changes.filter((c) => c.classification !== 'compatible' && !(c.store !== undefined && resetStores.has(c.store)) && !(c.formerStore !== undefined && resetStores.has(c.formerStore)));
}

const RANK: Record<ChangeClass, number> = { breaking: 0, 'state-resetting': 1, compatible: 2 };

/** The worst first, in their order otherwise. */
export function sortChanges(changes: readonly TopologyChange[]): TopologyChange[] {
  return [...changes].sort((a, b) => RANK[a.classification] - RANK[b.classification]);
}

/** The changes as `upgrade check` prints them, one a line, the worst first. */
export function formatChanges(changes: readonly TopologyChange[]): string[] {
  return sortChanges(changes).map((c) => `${c.classification}: ${c.what}: ${c.reason}`);
}
