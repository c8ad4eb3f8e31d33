import type { Serde } from '../serdes/serde.ts';
import type { TopologyBuilder } from '../dsl/topology-builder.ts';
import { STAGE_KINDS, type StageKind, type StageSpec } from '../dsl/nodes.ts';
import { DEFAULT_RETRY_POLICY, type RetryPolicy, type WindowSpec } from '../dsl/types.ts';
import type { SessionWindowSpec } from '../dsl/session-windows.ts';
import type { StoreKind } from '../state/store.ts';
import type { VersionedStoreSpec } from '../state/versioned.ts';
import {
  AsyncStageFunctionError,
  DuplicateNodeNameError,
  DuplicateSourceTopicError,
  EmptyTopologyError,
  InvalidAppIdError,
  InvalidStageOptionError,
  InvalidTopicNameError,
  JoinInputNotTableError,
  JoinKeySerdeMismatchError,
  MissingSerdeError,
  SinkToOwnSourceError,
  StatefulWithoutKeyError,
  StoreSharedError,
  TopologyCycleError,
  type TopologyErrorLocation,
} from './errors.ts';
import { CompiledTopology } from './compiled.ts';
import { autoName, isTable, retryPolicyOf, type StageCompile, type StageCompiler, type WorkNode } from './stage-compile.ts';
import { STAGE_COMPILERS } from './stages/index.ts';
import { internalTopicConfig } from './internal-topic-configs.ts';
import type { CoPartitionGroup, CompileOptions, CompiledGlobalTable, CompiledNode, CompiledStore, CompiledSubtopology, TopicRequirement } from './types.ts';

const NAME_RE = /^[a-zA-Z0-9._-]{1,249}$/;

/** Stages whose inputs meet by key in one task: a join's sides, a cogroup's grouped streams. */
const JOIN_KINDS: ReadonlySet<StageKind> = new Set(['streamTableJoin', 'tableTableJoin', 'streamStreamJoin', 'cogroup', 'fkSubscriptionJoin', 'fkResponseJoin']);

function isAsyncFunction(fn: unknown): boolean {
  return typeof fn === 'function' && (fn as { [Symbol.toStringTag]?: unknown })[Symbol.toStringTag] === 'AsyncFunction';
}

/**
 * The functions a stage calls for each record, which must return synchronously: every function among
 * its spec's own fields and the fields of its lists' entries (branches, punctuations). An effect, outside
 * the transaction, may be async.
 */
function stageFunctions(spec: StageSpec): unknown[] {
  if (STAGE_KINDS[spec.kind].boundary === 'external') return [];
  const fields = Object.values(spec).flatMap((v: unknown) => (Array.isArray(v) ? v.flatMap((entry: unknown) => (typeof entry === 'object' && entry !== null ? Object.values(entry) : [entry])) : [v]));
  return fields.filter((v) => typeof v === 'function');
}

function boundaryText(n: WorkNode): string {
  if (n.spec.kind !== 'effect') return 'inside the Kafka transaction';
  const key = n.spec.idempotencyKey ? 'from the idempotencyKey function' : '${topic}-${partition}-${offset} of the source record';
  return `outside the transaction: at-least-once (idempotency key: ${key})`;
}

export function compile(builder: TopologyBuilder, opts: CompileOptions = {}): CompiledTopology {
  const bopts = builder.options;
  const file = bopts.sourceFile;
  const loc = (node?: string): TopologyErrorLocation => ({ ...(node !== undefined ? { node } : {}), ...(file !== undefined ? { file } : {}) });
  const checkTopic = (topic: string, node?: string): void => {
    if (!NAME_RE.test(topic)) throw new InvalidTopicNameError(topic, loc(node));
  };
  const checkPolicy = (p: RetryPolicy, node?: string): void => {
    const ok = Number.isInteger(p.maxAttempts) && p.maxAttempts >= 1 && p.initialBackoffMs >= 0 && p.maxBackoffMs >= p.initialBackoffMs;
    if (!ok) throw new InvalidStageOptionError(`invalid retry policy ${JSON.stringify(p)}: maxAttempts must be an integer >= 1 and 0 <= initialBackoffMs <= maxBackoffMs`, loc(node));
  };

  const appId = opts.appId ?? bopts.appId;
  if (!NAME_RE.test(appId)) throw new InvalidAppIdError(appId, loc());
  const retry = retryPolicyOf(DEFAULT_RETRY_POLICY, bopts.retry);
  checkPolicy(retry);
  const deadLetterTopic = bopts.deadLetterTopic ?? `${appId}-dlq`;
  checkTopic(deadLetterTopic);

  const defs = builder.nodes;
  if (!defs.some((d) => d.spec.kind === 'source')) throw new EmptyTopologyError(loc());

  const work: WorkNode[] = [];
  const byIndex: WorkNode[] = [];
  const names = new Set<string>();
  const sourceTopics = new Map<string, string>();
  const storeOwners = new Map<string, string>();
  const stores: CompiledStore[] = [];
  const globalTables: CompiledGlobalTable[] = [];
  const nodePolicies = new Map<string, RetryPolicy>();

  const claimName = (name: string): void => {
    if (names.has(name)) throw new DuplicateNodeNameError(name, loc(name));
    names.add(name);
  };
  /** `sourceTopic`: a table read straight from a topic uses that topic as its changelog. */
  const addStore = (node: WorkNode, name: string, kind: StoreKind, keySerde: Serde<unknown>, valueSerde: Serde<unknown>, window?: WindowSpec | SessionWindowSpec, sourceTopic?: string, versioned?: VersionedStoreSpec): void => {
    const owner = storeOwners.get(name);
    if (owner !== undefined) throw new StoreSharedError(name, owner, loc(node.name));
    storeOwners.set(name, node.name);
    const changelogTopic = sourceTopic ?? `${appId}-${name}-changelog`;
    checkTopic(changelogTopic, node.name);
    node.stores.push(name);
    stores.push({ name, kind, node: node.name, subtopology: -1, changelogTopic, keySerde, valueSerde, ...(window === undefined ? {} : window.type === 'session' ? { session: window } : { window }), ...(sourceTopic !== undefined ? { sourceTopicChangelog: true } : {}), ...(versioned !== undefined ? { versioned } : {}) });
  };
  const requireSerde = <T>(serde: Serde<T> | undefined, what: string, hint: string, node: string): Serde<T> => {
    if (!serde) throw new MissingSerdeError(what, hint, loc(node));
    return serde;
  };
  /** Re-keyed records must go through Kafka so that each key lands in one task before a stateful stage. */
  const pinnedPartitions = new Map<string, number>();
  const repartition = (stateful: WorkNode, parent: WorkNode, storeName: string, keySerde: Serde<unknown>, valueSerde: Serde<unknown>, order: number, partitions?: number): WorkNode => {
    const topic = `${appId}-${storeName}-repartition`;
    checkTopic(topic, stateful.name);
    if (partitions !== undefined) pinnedPartitions.set(topic, partitions);
    const sink: WorkNode = { name: `${storeName}-repartition-sink`, kind: 'repartitionSink', spec: { kind: 'sink', topic }, order: order - 0.6, parents: [parent], stores: [], topic, keySerde, valueSerde, keyChanged: false, keyless: false, sub: -1 };
    const source: WorkNode = { name: `${storeName}-repartition-source`, kind: 'repartitionSource', spec: { kind: 'source', topic }, order: order - 0.4, parents: [], stores: [], topic, keySerde, valueSerde, keyChanged: false, keyless: false, sub: -1 };
    claimName(sink.name);
    claimName(source.name);
    work.push(sink, source);
    return source;
  };

  for (const def of defs) {
    const spec = def.spec;
    const parents = def.parents.map((i) => byIndex[i]!);
    const first = parents[0];
    const name = def.userName ?? (spec.kind === 'branchChild' && first ? `${first.name}-${spec.branch}` : autoName(spec.kind, def.index));
    claimName(name);
    for (const fn of stageFunctions(spec)) if (isAsyncFunction(fn)) throw new AsyncStageFunctionError(spec.kind, loc(name));

    const info = STAGE_KINDS[spec.kind];
    const node: WorkNode = {
      name,
      kind: spec.kind,
      spec,
      order: def.index,
      parents,
      stores: [],
      ...(def.keySerde ? { keySerde: def.keySerde } : {}),
      ...(def.valueSerde ? { valueSerde: def.valueSerde } : {}),
      keyChanged: info.changesKey || parents.some((p) => p.keyChanged),
      keyless: !info.changesKey && (spec.kind === 'source' ? def.keySerde === undefined : parents.some((p) => p.keyless)),
      sub: -1,
    };
    const stage: StageCompile = {
      appId,
      name,
      def,
      node,
      parents,
      retry,
      loc,
      checkTopic,
      checkPolicy,
      addStore: (store, kind, keySerde, valueSerde, window, sourceTopic, versioned) => addStore(node, store, kind, keySerde, valueSerde, window, sourceTopic, versioned),
      requireSerde: (serde, what, hint) => requireSerde(serde, what, hint, name),
      repartition: (parent, store, keySerde, valueSerde, partitions) => repartition(node, parent, store, keySerde, valueSerde, def.index, partitions),
      storeName: (given) => given ?? def.userName ?? `${autoName(spec.kind, def.index).replace(/-(\d{10})$/, '-STATE-STORE-$1')}`,
      requireTable: (n) => {
        if (!isTable(n)) throw new JoinInputNotTableError(n.spec.kind === 'aggregate' ? 'windowed aggregate' : `${n.kind} stream`, loc(name));
        return n;
      },
      checkJoinKeys: (a, b) => {
        if (a.keySerde && b.keySerde && a.keySerde !== b.keySerde && a.keySerde.name !== b.keySerde.name) throw new JoinKeySerdeMismatchError(a.keySerde.name, b.keySerde.name, loc(name));
      },
      keyedInput: (side, topicPrefix, keySerde, valueSerde) => {
        if (side.keyless) throw new StatefulWithoutKeyError(spec.kind, loc(name));
        if (!side.keyChanged) return side;
        const key = requireSerde(keySerde, `the key of repartition topic ${appId}-${topicPrefix}-repartition`, 'pass { key } to the selectKey/map before the join', name);
        const value = requireSerde(valueSerde, `the value of repartition topic ${appId}-${topicPrefix}-repartition`, 'pass { value } to the mapValues/map/flatMap before the join', name);
        return repartition(node, side, topicPrefix, key, value, def.index);
      },
      claimSourceTopic: (topic) => {
        if (sourceTopics.has(topic)) throw new DuplicateSourceTopicError(topic, loc(name));
        sourceTopics.set(topic, name);
      },
      claimStore: (store) => {
        const owner = storeOwners.get(store);
        if (owner !== undefined) throw new StoreSharedError(store, owner, loc(name));
        storeOwners.set(store, name);
      },
      addGlobalTable: (table) => void globalTables.push(table),
      setRetryPolicy: (policy) => void nodePolicies.set(name, policy),
    };
    const compileStage = STAGE_COMPILERS[spec.kind] as StageCompiler | undefined;
    const placed = compileStage?.(stage, spec as never);
    byIndex[def.index] = node;
    if (placed === 'outside-tasks') continue;
    work.push(node);
  }

  work.sort((a, b) => a.order - b.order);
  assignSubtopologies(work);

  const children = new Map<WorkNode, WorkNode[]>();
  for (const n of work) for (const p of n.parents) (children.get(p) ?? children.set(p, []).get(p)!).push(n);

  const compiledNodes: CompiledNode[] = work.map((n) => ({
    name: n.name,
    kind: n.kind,
    spec: n.spec,
    subtopology: n.sub,
    parents: n.parents.map((p) => p.name),
    children: (children.get(n) ?? []).map((c) => c.name),
    boundary: STAGE_KINDS[n.kind].boundary,
    boundaryText: boundaryText(n),
    stores: n.stores,
    ...(n.tableInputs ? { tableInputs: n.tableInputs } : {}),
    ...(n.globalStore !== undefined ? { globalStore: n.globalStore } : {}),
    ...(n.topic !== undefined ? { topic: n.topic } : {}),
    ...(n.keySerde ? { keySerde: n.keySerde } : {}),
    ...(n.valueSerde ? { valueSerde: n.valueSerde } : {}),
  }));
  const subCount = Math.max(...work.map((n) => n.sub)) + 1;
  const subtopologies: CompiledSubtopology[] = [];
  for (let id = 0; id < subCount; id++) {
    const nodes = compiledNodes.filter((n) => n.subtopology === id);
    subtopologies.push({
      id,
      nodes,
      sourceTopics: nodes.filter((n) => n.kind === 'source' || n.kind === 'repartitionSource').map((n) => n.topic!),
      stores: nodes.flatMap((n) => n.stores),
    });
  }
  const subOfNode = new Map(compiledNodes.map((n) => [n.name, n.subtopology]));
  const finalStores = stores.map((s) => ({ ...s, subtopology: subOfNode.get(s.node)! }));

  checkTopicCycles(compiledNodes, subtopologies, loc);

  // A task reads partition N of every topic of its sub-topology, so a join's sides meet only if those topics are co-partitioned.
  const copartitionGroups: CoPartitionGroup[] = compiledNodes
    .filter((n) => JOIN_KINDS.has(n.kind))
    .map((n) => ({ join: n.name, subtopology: n.subtopology, topics: subtopologies[n.subtopology]!.sourceTopics }))
    .filter((g) => g.topics.length > 1);

  const topics: TopicRequirement[] = [];
  const seen = new Set<string>();
  const addTopic = (t: TopicRequirement): void => {
    if (seen.has(t.name)) return;
    seen.add(t.name);
    topics.push(t);
  };
  for (const n of compiledNodes) if (n.kind === 'source') addTopic({ name: n.topic!, kind: 'source', internal: false, cleanupPolicy: 'delete' });
  for (const g of globalTables) addTopic({ name: g.topic, kind: 'source', internal: false, cleanupPolicy: 'delete' });
  for (const n of compiledNodes) if (n.kind === 'sink') addTopic({ name: n.topic!, kind: 'sink', internal: false, cleanupPolicy: 'delete' });
  for (const n of compiledNodes) if (n.kind === 'repartitionSource') addTopic({ name: n.topic!, kind: 'repartition', internal: true, cleanupPolicy: 'delete', config: internalTopicConfig('repartition'), subtopology: n.subtopology, ...(pinnedPartitions.has(n.topic!) ? { partitions: pinnedPartitions.get(n.topic!)! } : {}) });
  for (const s of finalStores) if (!s.sourceTopicChangelog) addTopic({ name: s.changelogTopic, kind: 'changelog', internal: true, cleanupPolicy: 'compact', config: internalTopicConfig('changelog'), subtopology: s.subtopology });
  const ownDeadLetterTopic = bopts.deadLetterTopic === undefined;
  addTopic({ name: deadLetterTopic, kind: 'dead-letter', internal: ownDeadLetterTopic, cleanupPolicy: 'delete', ...(ownDeadLetterTopic ? { config: internalTopicConfig('dead-letter') } : {}) });

  return new CompiledTopology({
    appId,
    ...(file !== undefined ? { sourceFile: file } : {}),
    deadLetterTopic,
    retry,
    unknownErrors: bopts.unknownErrors ?? 'permanent',
    nodePolicies,
    subtopologies,
    stores: finalStores,
    topics,
    copartitionGroups,
    globalTables,
  });
}

/** Connected components of the node graph; repartition topics are where it is cut. */
function assignSubtopologies(work: WorkNode[]): void {
  const parent = new Map<WorkNode, WorkNode>();
  const find = (n: WorkNode): WorkNode => {
    let r = n;
    while (parent.get(r) !== r) r = parent.get(r)!;
    parent.set(n, r);
    return r;
  };
  for (const n of work) parent.set(n, n);
  for (const n of work) for (const p of n.parents) parent.set(find(n), find(p));
  const ids = new Map<WorkNode, number>();
  for (const n of work) {
    const root = find(n);
    if (!ids.has(root)) ids.set(root, ids.size);
    n.sub = ids.get(root)!;
  }
}

function checkTopicCycles(nodes: readonly CompiledNode[], subs: readonly CompiledSubtopology[], loc: (node?: string) => TopologyErrorLocation): void {
  const readers = new Map<string, number[]>();
  for (const s of subs) for (const t of s.sourceTopics) (readers.get(t) ?? readers.set(t, []).get(t)!).push(s.id);
  const edges = new Map<number, { to: number; topic: string }[]>();
  // A foreign-key join's answers go back to the sub-topology that asked: a loop no record goes round twice.
  const answers = new Set(nodes.filter((n) => n.kind === 'fkSubscriptionJoin').flatMap((n) => n.children));
  for (const n of nodes) {
    if (n.kind !== 'sink' && n.kind !== 'repartitionSink') continue;
    if (answers.has(n.name)) continue;
    for (const r of readers.get(n.topic!) ?? []) {
      if (r === n.subtopology) throw new SinkToOwnSourceError(n.topic!, loc(n.name));
      (edges.get(n.subtopology) ?? edges.set(n.subtopology, []).get(n.subtopology)!).push({ to: r, topic: n.topic! });
    }
  }
  const state = new Map<number, 'visiting' | 'done'>();
  const path: string[] = [];
  const visit = (s: number): void => {
    state.set(s, 'visiting');
    for (const e of edges.get(s) ?? []) {
      path.push(e.topic);
      const st = state.get(e.to);
      if (st === 'visiting') {
        const sink = nodes.find((n) => (n.kind === 'sink' || n.kind === 'repartitionSink') && n.topic === e.topic);
        throw new TopologyCycleError(path, loc(sink?.name));
      }
      if (st === undefined) visit(e.to);
      path.pop();
    }
    state.set(s, 'done');
  };
  for (const s of subs) if (!state.has(s.id)) visit(s.id);
}
