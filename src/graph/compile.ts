import type { Serde } from '../serdes/serde.ts';
import { stringSerde } from '../serdes/basic.ts';
import type { TopologyBuilder } from '../dsl/builder.ts';
import { STAGE_KINDS, type NodeDef, type StageKind, type StageSpec } from '../dsl/nodes.ts';
import { DEFAULT_RETRY_POLICY, type RetryPolicy, type WindowSpec } from '../dsl/types.ts';
import { countSerde } from '../state/internal-serdes.ts';
import type { SessionWindowSpec } from '../dsl/session-windows.ts';
import type { StoreKind } from '../state/store.ts';
import {
  AsyncStageFunctionError,
  DuplicateNodeNameError,
  DuplicateSourceTopicError,
  EmptyTopologyError,
  InvalidAppIdError,
  InvalidStageOptionError,
  InvalidTopicNameError,
  InvalidWindowError,
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
import { internalTopicConfig } from './internal-topic-configs.ts';
import type { CoPartitionGroup, CompileOptions, CompiledGlobalTable, CompiledNode, CompiledStore, CompiledSubtopology, TopicRequirement } from './types.ts';

const NAME_RE = /^[a-zA-Z0-9._-]{1,249}$/;

/** Keys of a keyless stream: always null, so sinks of keyless streams need no key serde. */
const nullKeySerde: Serde<unknown> = { name: 'null', serialize: () => null, deserialize: () => null };

interface WorkNode {
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

const TABLE_KINDS: ReadonlySet<StageKind> = new Set(['toTable', 'tableFilter', 'tableMapValues', 'tableTableJoin']);
const JOIN_KINDS: ReadonlySet<StageKind> = new Set(['streamTableJoin', 'tableTableJoin', 'streamStreamJoin']);

/** A stage whose rows can be read by key: a table (a windowed aggregate's rows are per window, not per key). */
function isTable(n: WorkNode): boolean {
  return TABLE_KINDS.has(n.kind) || (n.spec.kind === 'aggregate' && n.spec.window === undefined && n.spec.session === undefined);
}

function autoName(kind: StageKind, index: number): string {
  const prefix = kind === 'toStream' || TABLE_KINDS.has(kind) ? 'KTABLE' : 'KSTREAM';
  return `${prefix}-${STAGE_KINDS[kind].label}-${String(index).padStart(10, '0')}`;
}

function isAsyncFunction(fn: unknown): boolean {
  return typeof fn === 'function' && (fn as { [Symbol.toStringTag]?: unknown })[Symbol.toStringTag] === 'AsyncFunction';
}

function stageFunctions(spec: StageSpec): unknown[] {
  switch (spec.kind) {
    case 'filter':
    case 'map':
    case 'mapValues':
    case 'flatMap':
    case 'flatMapValues':
    case 'selectKey':
    case 'groupBy':
    case 'peek':
    case 'setHeaders':
    case 'dedupe':
    case 'latestByVersion':
      return [spec.fn];
    case 'branch':
      return spec.branches.map((b) => b.fn);
    case 'aggregate':
      return spec.merger ? [spec.init, spec.fn, spec.merger] : [spec.init, spec.fn];
    case 'process':
      return [spec.fn, ...spec.punctuations.map((p) => p.run)];
    case 'tableFilter':
    case 'tableMapValues':
      return [spec.fn];
    case 'streamTableJoin':
    case 'tableTableJoin':
    case 'streamStreamJoin':
      return [spec.joiner];
    case 'globalTableJoin':
      return [spec.keySelector, spec.joiner];
    case 'source':
      return spec.timestamp ? [spec.timestamp] : [];
    default:
      return [];
  }
}

function boundaryText(n: WorkNode): string {
  if (n.spec.kind !== 'effect') return 'inside the Kafka transaction';
  const key = n.spec.idempotencyKey ? 'from the idempotencyKey function' : '${topic}-${partition}-${offset} of the source record';
  return `outside the transaction: at-least-once (idempotency key: ${key})`;
}

function retryPolicyOf(base: RetryPolicy, override: Partial<RetryPolicy> | undefined): RetryPolicy {
  return override ? { ...base, ...override } : base;
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
  const addStore = (node: WorkNode, name: string, kind: StoreKind, keySerde: Serde<unknown>, valueSerde: Serde<unknown>, window?: WindowSpec | SessionWindowSpec, sourceTopic?: string): void => {
    const owner = storeOwners.get(name);
    if (owner !== undefined) throw new StoreSharedError(name, owner, loc(node.name));
    storeOwners.set(name, node.name);
    const changelogTopic = sourceTopic ?? `${appId}-${name}-changelog`;
    checkTopic(changelogTopic, node.name);
    node.stores.push(name);
    stores.push({ name, kind, node: node.name, subtopology: -1, changelogTopic, keySerde, valueSerde, ...(window === undefined ? {} : window.type === 'session' ? { session: window } : { window }), ...(sourceTopic !== undefined ? { sourceTopicChangelog: true } : {}) });
  };
  const requireSerde = <T>(serde: Serde<T> | undefined, what: string, hint: string, node: string): Serde<T> => {
    if (!serde) throw new MissingSerdeError(what, hint, loc(node));
    return serde;
  };
  /** Re-keyed records must go through Kafka so that each key lands in one task before a stateful stage. */
  const repartition = (stateful: WorkNode, parent: WorkNode, storeName: string, keySerde: Serde<unknown>, valueSerde: Serde<unknown>, order: number): WorkNode => {
    const topic = `${appId}-${storeName}-repartition`;
    checkTopic(topic, stateful.name);
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
    const storeName = (s: string | undefined): string => s ?? def.userName ?? `${autoName(spec.kind, def.index).replace(/-(\d{10})$/, '-STATE-STORE-$1')}`;

    const requireTable = (n: WorkNode): WorkNode => {
      if (!isTable(n)) throw new JoinInputNotTableError(n.spec.kind === 'aggregate' ? 'windowed aggregate' : `${n.kind} stream`, loc(name));
      return n;
    };
    const checkJoinKeys = (a: WorkNode, b: WorkNode): void => {
      if (a.keySerde && b.keySerde && a.keySerde !== b.keySerde && a.keySerde.name !== b.keySerde.name) throw new JoinKeySerdeMismatchError(a.keySerde.name, b.keySerde.name, loc(name));
    };
    /** A re-keyed stream going into a join goes through a repartition topic first, as before an aggregate. */
    const keyedInput = (side: WorkNode, topicPrefix: string, keySerde: Serde<unknown> | undefined, valueSerde: Serde<unknown> | undefined): WorkNode => {
      if (side.keyless) throw new StatefulWithoutKeyError(spec.kind, loc(name));
      if (!side.keyChanged) return side;
      const key = requireSerde(keySerde, `the key of repartition topic ${appId}-${topicPrefix}-repartition`, 'pass { key } to the selectKey/map before the join', name);
      const value = requireSerde(valueSerde, `the value of repartition topic ${appId}-${topicPrefix}-repartition`, 'pass { value } to the mapValues/map/flatMap before the join', name);
      return repartition(node, side, topicPrefix, key, value, def.index);
    };

    switch (spec.kind) {
      case 'toTable': {
        const parent = first!;
        if (parent.keyless) throw new StatefulWithoutKeyError('toTable', loc(name));
        const store = storeName(spec.store);
        const key = requireSerde(def.keySerde, 'the key of the table', 'pass toTable({ key }) or give the stream a key serde', name);
        const value = requireSerde(def.valueSerde, 'the value of the table', 'pass toTable({ value }); the stream lost its value serde at a mapValues/map/flatMap', name);
        if (parent.keyChanged) node.parents = [repartition(node, parent, store, key, value, def.index)];
        node.keyChanged = false;
        const tableSource = parent.spec.kind === 'source' && parent.spec.table === true ? parent.spec.topic : undefined;
        addStore(node, store, 'key-value', key, value, undefined, tableSource);
        break;
      }
      case 'tableFilter':
      case 'tableMapValues': {
        node.tableInputs = [requireTable(first!).name];
        break;
      }
      case 'streamTableJoin': {
        const table = requireTable(parents[1]!);
        const stream = keyedInput(first!, name, first!.keySerde, first!.valueSerde);
        checkJoinKeys(stream, table);
        node.parents = [stream, table];
        node.tableInputs = [table.name];
        node.keyChanged = false;
        node.keyless = false;
        break;
      }
      case 'tableTableJoin': {
        const [left, right] = [requireTable(first!), requireTable(parents[1]!)];
        checkJoinKeys(left, right);
        node.tableInputs = [left.name, right.name];
        break;
      }
      case 'streamStreamJoin': {
        const w = spec.window;
        for (const [what, ms] of [['before', w.beforeMs], ['after', w.afterMs], ['grace', w.graceMs]] as const) {
          if (!(Number.isFinite(ms) && ms >= 0)) throw new InvalidWindowError(`join window ${what} must be zero or positive, got ${ms}`, loc(name));
        }
        const prefix = spec.store ?? def.userName ?? autoName(spec.kind, def.index).replace(/-(\d{10})$/, '-STORE-$1');
        const left = keyedInput(first!, `${prefix}-this`, spec.keySerde, spec.thisValueSerde);
        const right = keyedInput(parents[1]!, `${prefix}-other`, spec.keySerde, spec.otherValueSerde);
        checkJoinKeys(left, right);
        node.parents = [left, right];
        node.keyChanged = false;
        node.keyless = false;
        const key = requireSerde(spec.keySerde, 'the key of the join window stores', 'pass { key } in the join options', name);
        const thisValue = requireSerde(spec.thisValueSerde, 'the values of the join window store of this stream', 'pass { thisValue } in the join options', name);
        const otherValue = requireSerde(spec.otherValueSerde, 'the values of the join window store of the other stream', 'pass { otherValue } in the join options', name);
        addStore(node, `${prefix}-this`, 'join-window', key, thisValue);
        addStore(node, `${prefix}-other`, 'join-window', key, otherValue);
        break;
      }
      case 'globalTable': {
        checkTopic(spec.topic, name);
        if (sourceTopics.has(spec.topic)) throw new DuplicateSourceTopicError(spec.topic, loc(name));
        sourceTopics.set(spec.topic, name);
        const store = storeName(spec.store);
        if (storeOwners.has(store)) throw new StoreSharedError(store, storeOwners.get(store)!, loc(name));
        storeOwners.set(store, name);
        node.globalStore = store;
        globalTables.push({ store, node: name, topic: spec.topic, keySerde: def.keySerde!, valueSerde: def.valueSerde! });
        // not part of any sub-topology: every worker reads it whole, outside the tasks
        byIndex[def.index] = node;
        continue;
      }
      case 'globalTableJoin': {
        const global = parents[1]!;
        node.parents = [first!];
        node.globalStore = global.globalStore!;
        break;
      }
      case 'source': {
        checkTopic(spec.topic, name);
        if (sourceTopics.has(spec.topic)) throw new DuplicateSourceTopicError(spec.topic, loc(name));
        sourceTopics.set(spec.topic, name);
        node.topic = spec.topic;
        if (!node.keySerde) node.keySerde = nullKeySerde;
        break;
      }
      case 'sink': {
        checkTopic(spec.topic, name);
        node.topic = spec.topic;
        const parent = first!;
        node.keySerde = def.keySerde ?? (parent.keyless ? nullKeySerde : requireSerde(def.keySerde, `the key of sink topic ${spec.topic}`, 'pass to(topic, { key })', name));
        node.valueSerde = requireSerde(def.valueSerde, `the value of sink topic ${spec.topic}`, 'pass to(topic, { value }); the stream lost its value serde at a mapValues/map/flatMap', name);
        break;
      }
      case 'dedupe': {
        if (!(Number.isFinite(spec.ttlMs) && spec.ttlMs > 0)) throw new InvalidStageOptionError(`dedupe ttlMs must be a positive number of milliseconds, got ${spec.ttlMs}`, loc(name));
        addStore(node, storeName(spec.store), 'dedupe', stringSerde as Serde<unknown>, countSerde as Serde<unknown>);
        break;
      }
      case 'latestByVersion': {
        const parent = first!;
        if (parent.keyless) throw new StatefulWithoutKeyError('latestByVersion', loc(name));
        const store = storeName(spec.store);
        const key = requireSerde(parent.keySerde, 'the key of latestByVersion', 'give the upstream stream a key serde (stream(topic, { key }) or selectKey(fn, { key }))', name);
        if (parent.keyChanged) {
          const value = requireSerde(parent.valueSerde, `the value of repartition topic ${appId}-${store}-repartition`, 'the stream lost its value serde; pass { value } to the mapValues/map/flatMap before it', name);
          node.parents = [repartition(node, parent, store, key, value, def.index)];
        }
        node.keyChanged = false;
        addStore(node, store, 'version', key, countSerde as Serde<unknown>);
        break;
      }
      case 'aggregate': {
        const parent = first!;
        if (parent.keyless) throw new StatefulWithoutKeyError(spec.mode, loc(name));
        const w = spec.window;
        const session = spec.session;
        if (session) {
          if (!(Number.isFinite(session.inactivityGapMs) && session.inactivityGapMs > 0)) throw new InvalidWindowError(`session inactivity gap must be a positive number of milliseconds, got ${session.inactivityGapMs}`, loc(name));
          if (!(Number.isFinite(session.graceMs) && session.graceMs >= 0)) throw new InvalidWindowError(`grace must be zero or positive, got ${session.graceMs}`, loc(name));
        }
        if (w) {
          if (!(Number.isFinite(w.sizeMs) && w.sizeMs > 0)) throw new InvalidWindowError(`size must be a positive number of milliseconds, got ${w.sizeMs}`, loc(name));
          if (!(Number.isFinite(w.graceMs) && w.graceMs >= 0)) throw new InvalidWindowError(`grace must be zero or positive, got ${w.graceMs}`, loc(name));
          if (!(Number.isFinite(w.advanceMs) && w.advanceMs > 0 && w.advanceMs <= w.sizeMs)) throw new InvalidWindowError(`advance must be positive and at most the size (${w.sizeMs}), got ${w.advanceMs}`, loc(name));
        }
        const store = storeName(spec.store);
        const key = requireSerde(spec.groupKeySerde, `the grouping key of ${spec.mode}`, 'pass { key } to groupBy/groupByKey or give the stream a key serde', name);
        const state = requireSerde(spec.stateSerde, `the state of ${spec.mode}`, spec.mode === 'reduce' ? 'pass reduce(fn, { state }); the stream lost its value serde' : 'pass aggregate(init, fn, { state })', name);
        if (parent.keyChanged) {
          const value = requireSerde(spec.groupValueSerde, `the value of repartition topic ${appId}-${store}-repartition`, 'pass { value } to groupBy/groupByKey; the stream lost its value serde at a mapValues/map/flatMap', name);
          node.parents = [repartition(node, parent, store, key, value, def.index)];
        }
        node.keyChanged = false;
        node.keyless = false;
        addStore(node, store, session ? 'session' : w ? 'window' : 'key-value', key, state, session ?? w);
        break;
      }
      case 'suppress': {
        const parent = first!;
        const s = spec.suppress;
        if (!(isTable(parent) || parent.kind === 'aggregate' || parent.kind === 'suppress')) throw new InvalidStageOptionError(`suppress follows a table (an aggregate, or filter/mapValues of one), not a ${parent.kind} stream`, loc(name));
        if (s.until === 'window-closes' && spec.window === undefined) throw new InvalidStageOptionError('Suppressed.untilWindowCloses() needs a windowed aggregate upstream (windowedBy(...) then aggregate/reduce/count)', loc(name));
        if (s.until === 'time-limit' && !(Number.isFinite(s.timeLimitMs) && s.timeLimitMs > 0)) throw new InvalidStageOptionError(`Suppressed.untilTimeLimit needs a positive number of milliseconds, got ${s.timeLimitMs}`, loc(name));
        if (!(Number.isInteger(s.maxRecords) && s.maxRecords > 0) || !(Number.isInteger(s.maxBytes) && s.maxBytes > 0)) throw new InvalidStageOptionError(`suppress buffer bounds must be positive integers, got maxRecords ${s.maxRecords}, maxBytes ${s.maxBytes}`, loc(name));
        const key = requireSerde(def.keySerde, 'the key of the suppression buffer', 'give the grouping a key serde (groupBy(fn, { key }) or groupByKey({ key }))', name);
        const value = requireSerde(def.valueSerde, 'the value of the suppression buffer', 'pass { value } to the mapValues before suppress', name);
        addStore(node, storeName(spec.store), 'suppress', key, value);
        break;
      }
      case 'process': {
        for (const p of spec.punctuations) {
          if (!(Number.isFinite(p.everyMs) && p.everyMs > 0)) throw new InvalidStageOptionError(`punctuation everyMs must be a positive number of milliseconds, got ${p.everyMs}`, loc(name));
          if (p.on !== 'stream-time' && p.on !== 'wall-clock') throw new InvalidStageOptionError(`punctuation on must be 'stream-time' or 'wall-clock', got ${String(p.on)}`, loc(name));
        }
        if (spec.state) addStore(node, storeName(spec.state.store), 'key-value', spec.state.keySerde, spec.state.valueSerde);
        break;
      }
      case 'effect': {
        const policy = retryPolicyOf(retry, spec.retry);
        checkPolicy(policy, name);
        nodePolicies.set(name, policy);
        break;
      }
      default:
        break;
    }
    byIndex[def.index] = node;
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
  for (const n of compiledNodes) if (n.kind === 'repartitionSource') addTopic({ name: n.topic!, kind: 'repartition', internal: true, cleanupPolicy: 'delete', config: internalTopicConfig('repartition'), subtopology: n.subtopology });
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
  for (const n of nodes) {
    if (n.kind !== 'sink' && n.kind !== 'repartitionSink') continue;
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
