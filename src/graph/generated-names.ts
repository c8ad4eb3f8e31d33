// Stores and internal topics whose names compile derived from a stage's position: a stage added or
// removed before them renames them, and the next version would start on an empty store or leave
// records in an old topic (fingerprint-compare.ts reports it then; this says it before it happens).
import { fingerprintOf, type FingerprintInput, type TopologyFingerprint } from './fingerprint.ts';

export interface GeneratedName {
  readonly what: 'store' | 'repartition topic';
  readonly name: string;
  readonly stage: string;
  /** How to give it a stable name. */
  readonly fix: string;
}

export function generatedNames(fingerprint: Pick<TopologyFingerprint, 'stores' | 'repartitionTopics'>): GeneratedName[] {
  const stores = fingerprint.stores.filter((s) => !s.named);
  const storeNames = new Set(stores.map((s) => s.name));
  return [
    ...stores.map((s): GeneratedName => ({ what: 'store', name: s.name, stage: s.stage, fix: `name stage ${s.stage} (${s.stageKind}): { name: '…' } or { store: '…' } in its options` })),
    // A store's own repartition topic is named after the store: naming the store names it.
    ...fingerprint.repartitionTopics
      .filter((t) => !t.named && ![...storeNames].some((s) => t.name.endsWith(`-${s}-repartition`)))
      .map((t): GeneratedName => ({ what: 'repartition topic', name: t.name, stage: t.stage, fix: `name the stage that writes it: repartition({ name: '…' }), or the store after it` })),
  ];
}

/** One line per generated name, as the worker logs it and `describe` prints it. */
export function formatGeneratedName(g: GeneratedName): string {
  return `${g.what} ${g.name} has a generated name: a stage added before stage ${g.stage} would rename it and the next version would start without its state; ${g.fix}`;
}

/** The warnings `describe` prints for a compiled topology's generated names. */
export function generatedNameWarnings(topology: FingerprintInput): string[] {
  return generatedNames(fingerprintOf(topology)).map(formatGeneratedName);
}
