import type { TopologyDescription } from '../cli/describe.ts';

export type GraphNodeKind = 'stage' | 'store' | 'topic';

/** One box of the console's graph; `details` is what a click on it shows. */
export interface GraphNode {
  /** `stage:<name>`, `store:<name>` or `topic:<name>`: unique across kinds, stable for tests and links. */
  readonly id: string;
  readonly kind: GraphNodeKind;
  /** What the box says: the `name` the user gave, or a generated name made readable (`readableName`). */
  readonly label: string;
  /** The real name (stage, store or topic), for the tooltip and the details. */
  readonly name: string;
  /** A second line under the label: the stage's kind, the store's kind, the topic's role. */
  readonly sublabel: string;
  /** The sub-topology a stage or store belongs to; topics connect sub-topologies and belong to none. */
  readonly subtopology?: number;
  /** Stages only: inside the Kafka transaction, or an effect outside it. */
  readonly boundary?: 'transactional' | 'external';
  readonly details: readonly (readonly [string, string])[];
}

export interface GraphEdge {
  readonly from: string;
  readonly to: string;
  /** `flow`: records move along it; `state`: a store and its changelog, or a table read by key. */
  readonly style: 'flow' | 'state';
}

export interface TopologyGraph {
  readonly appId: string;
  readonly nodes: readonly GraphNode[];
  readonly edges: readonly GraphEdge[];
  readonly subtopologies: readonly number[];
}

/** `KSTREAM-KEY-SELECT-0000000002` and the like, anywhere in a name (stores and topics derive from them). */
const GENERATED = /K(?:STREAM|TABLE)-([A-Z]+(?:-[A-Z]+)*?)(?:-STATE-STORE)?-0*(\d+)(?=$|-)/g;

/**
 * A generated name as a person reads it: `KSTREAM-SOURCE-0000000002` → `source #2`, the changelog
 * `orders-KSTREAM-AGGREGATE-STATE-STORE-0000000005-changelog` → `orders-aggregate #5-changelog`.
 * Names the user gave (the `name` option) come through unchanged.
 */
export function readableName(name: string): string {
  return name.replace(GENERATED, (_match, words: string, index: string) => `${words.toLowerCase()} #${index}`);
}

const stageId = (name: string): string => `stage:${name}`;
const storeId = (name: string): string => `store:${name}`;
const topicId = (name: string): string => `topic:${name}`;

/**
 * The graph the console draws, built from `describe --json`'s shape so that the page and the CLI can
 * never disagree about the topology: stages, their stores, and every topic (source, sink,
 * repartition, changelog, dead letters) as its own node between the stages that write and read it.
 */
export function topologyGraph(d: TopologyDescription): TopologyGraph {
  const nodes: GraphNode[] = [];
  const edges: GraphEdge[] = [];
  for (const t of d.topics) {
    const partitions = t.partitions !== undefined ? String(t.partitions) : t.subtopology !== undefined ? `tasks of sub-topology ${t.subtopology}` : 'as created';
    nodes.push({
      id: topicId(t.name),
      kind: 'topic',
      label: readableName(t.name),
      name: t.name,
      sublabel: `${t.kind} topic`,
      details: [['name', t.name], ['type', `${t.kind} topic (${t.internal ? 'internal, created by the app' : 'external'})`], ['cleanup.policy', t.cleanupPolicy], ['partitions', partitions]],
    });
  }
  for (const s of d.subtopologies) {
    for (const n of s.nodes) {
      const details: [string, string][] = [
        ['name', n.name],
        ['type', `${n.kind} (${n.role})`],
        ['sub-topology', String(s.id)],
        ['exactly-once', n.eos],
      ];
      if (n.idempotencyKey !== undefined) details.push(['idempotency key', n.idempotencyKey]);
      if (n.topic !== undefined) details.push(['topic', n.topic]);
      if (n.stores.length > 0) details.push(['stores', n.stores.join(', ')]);
      if (n.keySerde !== undefined) details.push(['key serde', n.keySerde]);
      if (n.valueSerde !== undefined) details.push(['value serde', n.valueSerde]);
      if (n.tableInputs !== undefined) details.push(['reads tables', n.tableInputs.join(', ')]);
      if (n.globalStore !== undefined) details.push(['reads global table', n.globalStore]);
      nodes.push({ id: stageId(n.name), kind: 'stage', label: readableName(n.name), name: n.name, sublabel: n.idempotencyKey !== undefined ? `effect · key: ${n.idempotencyKey}` : n.kind, subtopology: s.id, boundary: n.boundary, details });
      if (n.role === 'source' && n.topic !== undefined) edges.push({ from: topicId(n.topic), to: stageId(n.name), style: 'flow' });
      if (n.kind === 'deadLetter') edges.push({ from: stageId(n.name), to: topicId(d.deadLetterTopic), style: 'flow' });
      else if (n.role === 'sink' && n.topic !== undefined) edges.push({ from: stageId(n.name), to: topicId(n.topic), style: 'flow' });
      for (const child of n.successors) edges.push({ from: stageId(n.name), to: stageId(child), style: 'flow' });
      for (const table of n.tableInputs ?? []) if (!n.predecessors.includes(table)) edges.push({ from: stageId(table), to: stageId(n.name), style: 'state' });
    }
  }
  for (const st of d.stores) {
    const window = st.window ? `${st.window.type}, ${st.window.type === 'sliding' ? 'time difference' : 'size'} ${st.window.sizeMs} ms, grace ${st.window.graceMs} ms` : undefined;
    nodes.push({
      id: storeId(st.name),
      kind: 'store',
      label: readableName(st.name),
      name: st.name,
      sublabel: `${st.kind} store`,
      subtopology: st.subtopology,
      details: [['name', st.name], ['type', `${st.kind} store`], ['stage', st.node], ['sub-topology', String(st.subtopology)], ['changelog', `${st.changelogTopic}${st.sourceTopicChangelog ? ' (its source topic)' : ''}`], ...(window ? [['window', window] as [string, string]] : []), ...(st.versioned ? [['history retention', `${st.versioned.historyRetentionMs} ms`] as [string, string]] : [])],
    });
    edges.push({ from: stageId(st.node), to: storeId(st.name), style: 'state' });
    if (!st.sourceTopicChangelog) edges.push({ from: storeId(st.name), to: topicId(st.changelogTopic), style: 'state' });
  }
  for (const g of d.globalTables) edges.push({ from: topicId(g.topic), to: stageId(g.node), style: 'state' });
  // An edge to a node the description does not list (a topic it omits) would make the layout throw in the browser.
  const known = new Set(nodes.map((n) => n.id));
  return { appId: d.appId, nodes, edges: edges.filter((e) => known.has(e.from) && known.has(e.to)), subtopologies: d.subtopologies.map((s) => s.id) };
}
