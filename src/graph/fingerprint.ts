// What of a compiled topology the state it leaves behind depends on: its stores and their encodings,
// its internal topics and how their keys are derived, its sources and partition counts. A running
// application records it (runtime/worker/topology-record.ts) and the next version is compared with it
// (fingerprint-compare.ts) before it may start on that state.
import { createHash } from 'node:crypto';
import { STAGE_KINDS, type StageSpec } from '../dsl/nodes.ts';
import type { Serde } from '../serdes/serde.ts';
import type { CompiledNode, CompiledStore, CompiledSubtopology, TopicRequirement } from './types.ts';

/** Bumped when the shape below changes in a way an older record cannot be compared with. */
export const FINGERPRINT_FORMAT = 1;

/** How a serde encodes: its name, and for schema-based serdes (Avro) a hash of the schema. */
export interface SerdeIdentity {
  readonly name: string;
  readonly schemaHash?: string;
}

export interface StoreFingerprint {
  readonly name: string;
  /** False: derived from the stage's position (KSTREAM-…-0000000003), so a stage added before it renames it. */
  readonly named: boolean;
  readonly stage: string;
  readonly stageKind: string;
  readonly kind: string;
  readonly subtopology: number;
  readonly changelogTopic: string;
  /** The changelog's partition count (its sub-topology's task count), when partitions were resolved. */
  readonly partitions?: number;
  readonly key: SerdeIdentity;
  readonly value: SerdeIdentity;
  /** Window, session or version-history settings that decide how its keys are laid out; '' for none. */
  readonly layout: string;
}

export interface RepartitionTopicFingerprint {
  readonly name: string;
  readonly named: boolean;
  /** The stage whose input goes through it (the stateful stage, the join, the repartition stage). */
  readonly stage: string;
  /** The sub-topology that reads it. */
  readonly subtopology: number;
  /** The sub-topology that writes it. */
  readonly writer: number;
  readonly partitions?: number;
  /** Hash of the source text of every key-changing function between the topic's writer's sources and the topic. */
  readonly keyDerivation: string;
  readonly key: SerdeIdentity;
  readonly value: SerdeIdentity;
}

export interface SourceFingerprint {
  readonly topic: string;
  readonly subtopology: number | undefined;
  readonly partitions?: number;
}

export interface SubtopologyFingerprint {
  readonly id: number;
  readonly sourceTopics: readonly string[];
  readonly stores: readonly string[];
  /** Hash of its stages' kinds, names and function texts: any change of what it computes changes it. */
  readonly stagesHash: string;
}

export interface TopologyFingerprint {
  readonly format: number;
  readonly appId: string;
  readonly subtopologies: readonly SubtopologyFingerprint[];
  readonly stores: readonly StoreFingerprint[];
  readonly repartitionTopics: readonly RepartitionTopicFingerprint[];
  readonly sources: readonly SourceFingerprint[];
  readonly sinks: readonly string[];
}

/** What a fingerprint is taken of: a compiled topology (CompiledTopology is one). */
export interface FingerprintInput {
  readonly appId: string;
  readonly subtopologies: readonly CompiledSubtopology[];
  readonly stores: ReadonlyMap<string, CompiledStore>;
  readonly topics: readonly TopicRequirement[];
}

/** Names compile derives from a stage's position (graph/stage-compile.ts autoName), also inside topic names. */
const GENERATED_NAME = /(?:^|-)(?:KSTREAM|KTABLE)-[A-Z-]+-\d{10}(?:-|$)/;

export function isGeneratedName(name: string): boolean {
  return GENERATED_NAME.test(name);
}

const hash = (text: string): string => createHash('sha256').update(text).digest('hex').slice(0, 16);

export function serdeIdentity(serde: Serde<unknown>): SerdeIdentity {
  return serde.schemaHash === undefined ? { name: serde.name } : { name: serde.name, schemaHash: serde.schemaHash };
}

/** The source text of every function a stage's spec holds, its lists' entries included, in field order. */
function functionTexts(spec: StageSpec): string[] {
  const texts: string[] = [];
  const visit = (value: unknown, depth: number): void => {
    if (typeof value === 'function') texts.push(value.toString());
    else if (depth < 2 && Array.isArray(value)) for (const entry of value) visit(entry, depth + 1);
    else if (depth < 2 && typeof value === 'object' && value !== null && !('serialize' in value)) for (const field of Object.keys(value).sort()) visit((value as Record<string, unknown>)[field], depth + 1);
  };
  for (const field of Object.keys(spec).sort()) visit((spec as Record<string, unknown>)[field], 0);
  return texts;
}

/** Every key-changing function upstream of `node` within its sub-topology, sources first. */
function keyDerivation(node: CompiledNode, byName: ReadonlyMap<string, CompiledNode>): string {
  const seen = new Set<string>();
  const parts: string[] = [];
  const visit = (n: CompiledNode): void => {
    if (seen.has(n.name)) return;
    seen.add(n.name);
    for (const p of n.parents) {
      const parent = byName.get(p);
      if (parent !== undefined) visit(parent);
    }
    if (STAGE_KINDS[n.kind].changesKey) parts.push(`${n.kind}:${functionTexts(n.spec).join('\u0000')}`);
  };
  visit(node);
  return hash(parts.join('\u0001'));
}

function layoutOf(store: CompiledStore): string {
  const parts = { window: store.window, session: store.session, versioned: store.versioned };
  return Object.values(parts).every((v) => v === undefined) ? '' : JSON.stringify(parts);
}

/**
 * The fingerprint of a compiled topology; `partitions` (topic → count, as `resolvePartitions` gives
 * them) adds the partition counts of sources, repartition topics and changelogs.
 */
export function fingerprintOf(topology: FingerprintInput, partitions: ReadonlyMap<string, number> = new Map()): TopologyFingerprint {
  const nodes = topology.subtopologies.flatMap((s) => s.nodes);
  const byName = new Map(nodes.map((n) => [n.name, n] as const));
  const counted = (topic: string): { partitions?: number } => {
    const count = partitions.get(topic);
    return count === undefined ? {} : { partitions: count };
  };
  const readerOf = new Map(topology.subtopologies.flatMap((s) => s.sourceTopics.map((t) => [t, s.id] as const)));
  const stores = [...topology.stores.values()].map((s): StoreFingerprint => ({
    name: s.name,
    named: !isGeneratedName(s.name),
    stage: s.node,
    stageKind: byName.get(s.node)?.kind ?? 'globalTable',
    kind: s.kind,
    subtopology: s.subtopology,
    changelogTopic: s.changelogTopic,
    ...counted(s.changelogTopic),
    key: serdeIdentity(s.keySerde),
    value: serdeIdentity(s.valueSerde),
    layout: layoutOf(s),
  }));
  const repartitionTopics = nodes
    .filter((n) => n.kind === 'repartitionSink')
    .map((sink): RepartitionTopicFingerprint => {
      const topic = sink.topic!;
      const reader = nodes.find((n) => n.kind === 'repartitionSource' && n.topic === topic);
      return {
        name: topic,
        named: !isGeneratedName(topic),
        stage: reader?.children[0] ?? sink.name,
        subtopology: readerOf.get(topic) ?? -1,
        writer: sink.subtopology,
        ...counted(topic),
        keyDerivation: keyDerivation(sink, byName),
        key: serdeIdentity(sink.keySerde!),
        value: serdeIdentity(sink.valueSerde!),
      };
    });
  return {
    format: FINGERPRINT_FORMAT,
    appId: topology.appId,
    subtopologies: topology.subtopologies.map((s) => ({
      id: s.id,
      sourceTopics: s.sourceTopics,
      stores: s.stores,
      stagesHash: hash(s.nodes.map((n) => `${n.kind}:${n.name}:${n.topic ?? ''}:${functionTexts(n.spec).join('\u0000')}`).join('\u0001')),
    })),
    stores,
    repartitionTopics,
    sources: topology.topics.filter((t) => t.kind === 'source' && !t.internal).map((t) => ({ topic: t.name, subtopology: readerOf.get(t.name), ...counted(t.name) })),
    sinks: topology.topics.filter((t) => t.kind === 'sink').map((t) => t.name),
  };
}
