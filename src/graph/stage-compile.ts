// What compiling one stage may read and do: the compile driver (compile.ts) builds this per stage, and
// each stage kind's compile step (stages/) uses it. Kinds without a step (filter, map, ...) need none.
import type { NodeDef, StageKind, StageSpec } from '../dsl/nodes.ts';
import { STAGE_KINDS } from '../dsl/nodes.ts';
import type { RetryPolicy, WindowSpec } from '../dsl/types.ts';
import type { SessionWindowSpec } from '../dsl/session-windows.ts';
import type { Serde } from '../serdes/serde.ts';
import type { StoreKind } from '../state/store.ts';
import type { VersionedStoreSpec } from '../state/versioned.ts';
import type { TopologyErrorLocation } from './errors.ts';
import type { CompiledGlobalTable } from './types.ts';

/** A node while the topology is compiled. */
export interface WorkNode {
  name: string;
  kind: StageKind;
  spec: StageSpec;
  /** Position in topological order; synthetic repartition nodes sit just before their stateful stage. */
  order: number;
  parents: WorkNode[];
  stores: string[];
  topic?: string;
  keySerde?: Serde<unknown>;
  valueSerde?: Serde<unknown>;
  /** Key differs from the partitioning key of the topic the records came from. */
  keyChanged: boolean;
  keyless: boolean;
  sub: number;
  tableInputs?: string[];
  globalStore?: string;
}

/** Keys of a keyless stream: always null, so sinks of keyless streams need no key serde. */
export const nullKeySerde: Serde<unknown> = { name: 'null', serialize: () => null, deserialize: () => null };

export const TABLE_KINDS: ReadonlySet<StageKind> = new Set(['toTable', 'tableFilter', 'tableMapValues', 'tableTableJoin']);

/** A stage whose rows can be read by key: a table (a windowed aggregate's rows are per window, not per key). */
export function isTable(n: WorkNode): boolean {
  return TABLE_KINDS.has(n.kind) || (n.spec.kind === 'aggregate' && n.spec.window === undefined && n.spec.session === undefined) || (n.spec.kind === 'cogroup' && n.spec.window === undefined);
}

/** A foreign-key join's stages: named KTABLE-FK-JOIN-… as in Kafka Streams. */
const FOREIGN_KEY_JOIN_KINDS: ReadonlySet<StageKind> = new Set(['fkSubscribe', 'fkSubscriptionJoin', 'fkResponseJoin']);

export function autoName(kind: StageKind, index: number): string {
  const prefix = kind === 'toStream' || kind === 'tableGroupBy' || TABLE_KINDS.has(kind) || FOREIGN_KEY_JOIN_KINDS.has(kind) ? 'KTABLE' : 'KSTREAM';
  return `${prefix}-${STAGE_KINDS[kind].label}-${String(index).padStart(10, '0')}`;
}

export function retryPolicyOf(base: RetryPolicy, override: Partial<RetryPolicy> | undefined): RetryPolicy {
  return override ? { ...base, ...override } : base;
}

/** One stage being compiled, and what its compile step may do to the topology around it. */
export interface StageCompile {
  readonly appId: string;
  readonly name: string;
  readonly def: NodeDef;
  readonly node: WorkNode;
  readonly parents: readonly WorkNode[];
  /** The topology's retry policy, before per-stage overrides. */
  readonly retry: RetryPolicy;
  loc(node?: string): TopologyErrorLocation;
  checkTopic(topic: string, node?: string): void;
  checkPolicy(policy: RetryPolicy, node?: string): void;
  /** `sourceTopic`: a table read straight from a topic uses that topic as its changelog; `versioned`: a versioned table's store. */
  addStore(name: string, kind: StoreKind, keySerde: Serde<unknown>, valueSerde: Serde<unknown>, window?: WindowSpec | SessionWindowSpec, sourceTopic?: string, versioned?: VersionedStoreSpec): void;
  requireSerde<T>(serde: Serde<T> | undefined, what: string, hint: string): Serde<T>;
  /**
   * Re-keyed records go through Kafka first, so that each key lands in one task before a stateful stage;
   * returns the repartition topic's source node. `partitions` pins the topic's partition count.
   */
  repartition(parent: WorkNode, storeName: string, keySerde: Serde<unknown>, valueSerde: Serde<unknown>, partitions?: number): WorkNode;
  /** The stage's store name: the one given, else the stage's own name, else one derived from its position. */
  storeName(given: string | undefined): string;
  requireTable(n: WorkNode): WorkNode;
  checkJoinKeys(a: WorkNode, b: WorkNode): void;
  /** A re-keyed stream going into a join goes through a repartition topic first, as before an aggregate. */
  keyedInput(side: WorkNode, topicPrefix: string, keySerde: Serde<unknown> | undefined, valueSerde: Serde<unknown> | undefined): WorkNode;
  /** A topic read by one stage only. */
  claimSourceTopic(topic: string): void;
  /** A store owned by one stage only. */
  claimStore(store: string): void;
  addGlobalTable(table: CompiledGlobalTable): void;
  setRetryPolicy(policy: RetryPolicy): void;
}

/** Compiles one stage of kind K; 'outside-tasks': the stage belongs to no sub-topology (a global table). */
export type StageCompiler<K extends StageKind = StageKind> = (stage: StageCompile, spec: Extract<StageSpec, { kind: K }>) => void | 'outside-tasks';

export type StageCompilers = { readonly [K in StageKind]?: StageCompiler<K> };
