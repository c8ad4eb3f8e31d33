import { Option, type Command } from 'commander';
import { defineCommand } from './commands.ts';
import { compile } from '../graph/compile.ts';
import type { CompiledTopology } from '../graph/compiled.ts';
import { generatedNameWarnings } from '../graph/generated-names.ts';
import type { CompiledNode } from '../graph/types.ts';
import { STAGE_KINDS, type KeyValueFn } from '../dsl/nodes.ts';
import { loadTopology } from '../dsl/load.ts';
import { hostableSubtopologies, offloadableSubtopologies } from '../runtime/offload/offloaded-tasks.ts';
import { typecheckTopology } from './typecheck.ts';
import { sessionJson, timeDetails, timeDetailsText, windowText, type TimeDetails } from './describe-time.ts';
import { eventTimeOutputs, eventTimeOutputWarning } from './describe-retention.ts';
import { brokerConfig, readTopicConfigs, topicLines, uncompactedTableSources, type TopicConfigReading } from './describe-topic-configs.ts';
import { BootstrapMissingError, resolveConnection, type Connection, type ConnectionFlags } from './connection.ts';
import { addClientOptions } from './client-options.ts';

export type DescribeFormat = 'text' | 'json' | 'mermaid';

export const DESCRIBE_FORMATS: readonly DescribeFormat[] = ['text', 'json', 'mermaid'];

/** The JSON shape of `describe --json`; stable, so tools may parse it. */
export interface TopologyDescription {
  readonly appId: string;
  readonly sourceFile?: string;
  readonly deadLetterTopic: string;
  readonly retry: { readonly maxAttempts: number; readonly initialBackoffMs: number; readonly maxBackoffMs: number };
  readonly totalRetryBudgetMs: number;
  readonly subtopologies: readonly {
    readonly id: number;
    /** Stateless (no store or effect): under `onceflow run` its records are decoded, processed and encoded on the processing thread. */
    readonly processingThread: boolean;
    /** Stateful, and every stage can leave the main thread: under `onceflow run` (in-memory stores) its tasks live on a processing thread with their stores. */
    readonly hostedOnThread: boolean;
    /** Reads several input topics and keeps state: its tasks take their inputs' records in timestamp order (maxTaskIdleMs). */
    readonly synchronizesInputs: boolean;
    readonly nodes: readonly ({
      readonly name: string;
      readonly kind: string;
      readonly role: 'source' | 'processor' | 'sink';
      readonly topic?: string;
      readonly stores: readonly string[];
      readonly predecessors: readonly string[];
      readonly successors: readonly string[];
      readonly boundary: 'transactional' | 'external';
      readonly eos: string;
      readonly keySerde?: string;
      readonly valueSerde?: string;
      /** Tables whose rows a join or table operation reads by key. */
      readonly tableInputs?: readonly string[];
      readonly globalStore?: string;
      /** For an effect: what its idempotency key is made of (the key function's source, or the default). */
      readonly idempotencyKey?: string;
    } & TimeDetails)[];
  }[];
  readonly stores: readonly ({ readonly name: string; readonly kind: string; readonly node: string; readonly subtopology: number; readonly changelogTopic: string; readonly sourceTopicChangelog?: boolean; readonly window?: { readonly type: string; readonly sizeMs: number; readonly advanceMs: number; readonly graceMs: number; readonly emitFinal: boolean }; readonly versioned?: { readonly historyRetentionMs: number } } & ReturnType<typeof sessionJson>)[];
  /** `brokerConfig`: the shown configs as the broker applies them, for a topic it has (with a bootstrap only). */
  readonly topics: readonly (CompiledTopology['topics'][number] & { readonly brokerConfig?: Readonly<Record<string, string>> })[];
  /** With a bootstrap: the broker the configs were read from, or why they could not be. */
  readonly topicConfigsReadFrom?: string;
  readonly topicConfigsUnread?: string;
  /** Each join's inputs, which must have the same partition count, key encoding and partitioner. */
  readonly copartitionGroups: CompiledTopology['copartitionGroups'];
  readonly globalTables: readonly { readonly store: string; readonly node: string; readonly topic: string }[];
  /** What an operator should check before running it: output topics that get event-time-stamped aggregate results. */
  readonly warnings: readonly string[];
}

function roleOf(n: CompiledNode): 'source' | 'processor' | 'sink' {
  return STAGE_KINDS[n.kind].role;
}

const DEFAULT_IDEMPOTENCY_KEY = '${topic}-${partition}-${offset} of the source record';

/** The key function's own source, short enough for a label: it is what an operator checks the target dedupes on. */
function idempotencyKeyText(fn: KeyValueFn | undefined): string {
  if (!fn) return DEFAULT_IDEMPOTENCY_KEY;
  const source = String(fn).replace(/\s+/g, ' ').trim();
  return source.length > 80 ? `${source.slice(0, 77)}...` : source;
}

/** The note after a sub-topology's heading when the processing thread runs it. */
const ON_PROCESSING_THREAD = 'stateless: runs on the processing thread under onceflow run';
/** The note after a sub-topology's heading when processing threads host its tasks. */
const HOSTED_ON_THREAD = 'stateful: its tasks and stores live on a processing thread under onceflow run (in-memory stores)';

/**
 * Sub-topologies whose tasks hold back records until their inputs can go in timestamp order
 * (runtime/input-synchronizer.ts): several input topics, and state that the order decides.
 */
function synchronizedSubtopologies(c: CompiledTopology): Set<number> {
  return new Set(c.subtopologies.filter((s) => s.sourceTopics.length > 1 && s.stores.length > 0).map((s) => s.id));
}

const SYNCHRONIZED = 'inputs taken in timestamp order, waiting for an input that is behind (maxTaskIdleMs)';

export function describeJson(c: CompiledTopology, reading?: TopicConfigReading): TopologyDescription {
  const offloadable = new Set(offloadableSubtopologies(c));
  const hostable = new Set(hostableSubtopologies(c));
  const synchronized = synchronizedSubtopologies(c);
  return {
    appId: c.appId,
    ...(c.sourceFile !== undefined ? { sourceFile: c.sourceFile } : {}),
    deadLetterTopic: c.deadLetterTopic,
    retry: { ...c.retry },
    totalRetryBudgetMs: c.totalRetryBudgetMs(),
    subtopologies: c.subtopologies.map((s) => ({
      id: s.id,
      processingThread: offloadable.has(s.id),
      hostedOnThread: hostable.has(s.id),
      synchronizesInputs: synchronized.has(s.id),
      nodes: s.nodes.map((n) => ({
        name: n.name,
        kind: n.kind,
        role: roleOf(n),
        ...(n.topic !== undefined ? { topic: n.topic } : {}),
        stores: n.stores,
        predecessors: n.parents,
        successors: n.children,
        boundary: n.boundary,
        eos: n.boundaryText,
        ...(n.keySerde ? { keySerde: n.keySerde.name } : {}),
        ...(n.valueSerde ? { valueSerde: n.valueSerde.name } : {}),
        ...(n.tableInputs ? { tableInputs: n.tableInputs } : {}),
        ...(n.globalStore !== undefined ? { globalStore: n.globalStore } : {}),
        ...(n.spec.kind === 'effect' ? { idempotencyKey: idempotencyKeyText(n.spec.idempotencyKey) } : {}),
        ...timeDetails(n),
      })),
    })),
    stores: [...c.stores.values()].map((s) => ({
      name: s.name,
      kind: s.kind,
      node: s.node,
      subtopology: s.subtopology,
      changelogTopic: s.changelogTopic,
      ...(s.sourceTopicChangelog ? { sourceTopicChangelog: true } : {}),
      ...(s.window ? { window: { type: s.window.type, sizeMs: s.window.sizeMs, advanceMs: s.window.advanceMs, graceMs: s.window.graceMs, emitFinal: s.window.emitFinal } } : {}),
      ...sessionJson(s),
      ...(s.versioned ? { versioned: { historyRetentionMs: s.versioned.historyRetentionMs } } : {}),
    })),
    topics: c.topics.map((t) => {
      const read = brokerConfig(t, reading);
      return read === undefined ? t : { ...t, brokerConfig: read };
    }),
    ...(reading === undefined ? {} : 'topics' in reading ? { topicConfigsReadFrom: reading.from } : { topicConfigsUnread: reading.unread }),
    copartitionGroups: c.copartitionGroups,
    globalTables: c.globalTables.map((g) => ({ store: g.store, node: g.node, topic: g.topic })),
    warnings: [...eventTimeOutputs(c).map(eventTimeOutputWarning), ...uncompactedTableSources(c, reading), ...generatedNameWarnings(c)],
  };
}

/** Kafka Streams' Topology#describe() layout, plus stores, topics and each node's EOS boundary. */
export function describeText(c: CompiledTopology, reading?: TopicConfigReading): string {
  const lines: string[] = [];
  const offloadable = new Set(offloadableSubtopologies(c));
  const hostable = new Set(hostableSubtopologies(c));
  const synchronized = synchronizedSubtopologies(c);
  lines.push(`Topology: ${c.appId}${c.sourceFile !== undefined ? ` (${c.sourceFile})` : ''}`);
  lines.push('Topologies:');
  for (const s of c.subtopologies) {
    lines.push(`   Sub-topology: ${s.id}${offloadable.has(s.id) ? ` [${ON_PROCESSING_THREAD}]` : ''}${hostable.has(s.id) ? ` [${HOSTED_ON_THREAD}]` : ''}${synchronized.has(s.id) ? ` [${SYNCHRONIZED}]` : ''}`);
    for (const n of s.nodes) {
      const role = roleOf(n);
      const eos = `[${n.boundaryText}]`;
      if (role === 'source') lines.push(`    Source: ${n.name} (topics: [${n.topic}]) ${eos}`);
      else if (role === 'sink') lines.push(`    Sink: ${n.name} (topic: ${n.kind === 'deadLetter' ? c.deadLetterTopic : n.topic}) ${eos}`);
      else {
        const reads = n.tableInputs ? `, reads tables: [${n.tableInputs.join(', ')}]` : n.globalStore !== undefined ? `, reads global table: ${n.globalStore}` : '';
        lines.push(`    Processor: ${n.name} (${n.kind}, stores: [${n.stores.join(', ')}]${reads}${timeDetailsText(n)}) ${eos}`);
      }
      if (n.children.length > 0) lines.push(`      --> ${n.children.join(', ')}`);
      if (n.parents.length > 0) lines.push(`      <-- ${n.parents.join(', ')}`);
    }
  }
  lines.push('Stores:');
  if (c.stores.size === 0) lines.push('  (none)');
  for (const s of c.stores.values()) {
    lines.push(`  ${s.name} (${s.kind}, node ${s.node}, sub-topology ${s.subtopology}, changelog ${s.changelogTopic}${s.sourceTopicChangelog ? ' (its source topic)' : ''}${windowText(s)}${s.versioned ? `, history retention ${s.versioned.historyRetentionMs}ms` : ''})`);
  }
  if (c.stores.size > 0) {
    lines.push('  (interactive queries, on a replica run with --http-port: GET /stores/<store>/<key>, a window store\'s windows of a key, /stores/<store>?prefix=; /metadata/<store>/<key>?route=1 from any replica with --advertised-url)');
  }
  if (c.globalTables.length > 0) {
    lines.push('Global tables (read whole by every worker, outside the transaction):');
    for (const g of c.globalTables) lines.push(`  ${g.store} (node ${g.node}, topic ${g.topic})`);
  }
  if (c.copartitionGroups.length > 0) {
    lines.push('Co-partition groups (same partition count, key serde and partitioner):');
    for (const g of c.copartitionGroups) lines.push(`  ${g.join} (sub-topology ${g.subtopology}): [${g.topics.join(', ')}]`);
  }
  lines.push(...topicLines(c, reading));
  const warnings = [...eventTimeOutputs(c).map(eventTimeOutputWarning), ...uncompactedTableSources(c, reading), ...generatedNameWarnings(c)];
  if (warnings.length > 0) lines.push('Warnings:', ...warnings.map((w) => `  ${w}`));
  return lines.join('\n');
}

function mermaidLabel(s: string): string {
  return s.replace(/"/g, '#quot;');
}

export function describeMermaid(c: CompiledTopology): string {
  const lines = ['flowchart LR'];
  const ids = new Map<string, string>();
  let i = 0;
  for (const n of c.nodes.values()) ids.set(n.name, `n${i++}`);
  const topicIds = new Map<string, string>();
  const topicId = (t: string): string => topicIds.get(t) ?? topicIds.set(t, `t${topicIds.size}`).get(t)!;
  const external: string[] = [];
  const offloadable = new Set(offloadableSubtopologies(c));
  const hostable = new Set(hostableSubtopologies(c));
  for (const s of c.subtopologies) {
    lines.push(`  subgraph sub${s.id}["Sub-topology ${s.id}${offloadable.has(s.id) || hostable.has(s.id) ? '<br/>processing thread' : ''}"]`);
    for (const n of s.nodes) {
      const id = ids.get(n.name)!;
      const windows = n.stores.map((st) => windowText(c.stores.get(st)!).replace(/^, /, '')).filter((w) => w !== '');
      const extra = `${n.stores.length > 0 ? `<br/>stores: ${n.stores.map((st) => (c.stores.get(st)?.versioned ? `${st} (versioned)` : st)).join(', ')}` : ''}${windows.map((w) => `<br/>${w}`).join('')}`;
      const eos = n.boundary === 'external' ? '<br/>outside the transaction: at-least-once' : '';
      lines.push(`    ${id}["${mermaidLabel(n.name)}<br/>${n.kind}${extra}${eos}"]`);
      if (n.boundary === 'external') external.push(id);
    }
    lines.push('  end');
  }
  for (const t of c.topics) lines.push(`  ${topicId(t.name)}[("${mermaidLabel(t.name)}")]`);
  for (const n of c.nodes.values()) {
    const id = ids.get(n.name)!;
    const role = roleOf(n);
    if (role === 'source') lines.push(`  ${topicId(n.topic!)} --> ${id}`);
    if (n.kind === 'deadLetter') lines.push(`  ${id} --> ${topicId(c.deadLetterTopic)}`);
    else if (role === 'sink') lines.push(`  ${id} --> ${topicId(n.topic!)}`);
    for (const ch of n.children) lines.push(`  ${id} --> ${ids.get(ch)!}`);
    for (const st of n.stores) lines.push(`  ${id} -.-> ${topicId(c.stores.get(st)!.changelogTopic)}`);
  }
  for (const g of c.globalTables) {
    const id = `g${ids.size + topicIds.size}`;
    lines.push(`  ${id}[["${mermaidLabel(g.store)}<br/>global table"]]`);
    lines.push(`  ${topicId(g.topic)} --> ${id}`);
    for (const n of c.nodes.values()) if (n.globalStore === g.store) lines.push(`  ${id} -.-> ${ids.get(n.name)!}`);
  }
  for (const n of c.nodes.values()) for (const t of n.tableInputs ?? []) if (!n.parents.includes(t)) lines.push(`  ${ids.get(t)!} -.-> ${ids.get(n.name)!}`);
  lines.push('  classDef atLeastOnce stroke-dasharray: 5 5,stroke:#d33');
  if (external.length > 0) lines.push(`  class ${external.join(',')} atLeastOnce`);
  return lines.join('\n');
}

/** `reading`: the topics' configs as a broker applies them (describe-topic-configs.ts); mermaid shows none. */
export function describeTopology(compiled: CompiledTopology, format: DescribeFormat, reading?: TopicConfigReading): string {
  switch (format) {
    case 'json':
      return JSON.stringify(describeJson(compiled, reading), null, 2);
    case 'mermaid':
      return describeMermaid(compiled);
    case 'text':
      return describeText(compiled, reading);
  }
}

export interface DescribeFlags extends ConnectionFlags {
  readonly json?: boolean;
  readonly format?: DescribeFormat;
  readonly appId?: string;
  /** false with --no-typecheck. */
  readonly typecheck?: boolean;
}

export async function describeFile(file: string, flags: DescribeFlags): Promise<string> {
  if (flags.typecheck !== false) await typecheckTopology(file);
  const builder = await loadTopology(file);
  const compiled = compile(builder, flags.appId !== undefined ? { appId: flags.appId } : {});
  const format = flags.json ? 'json' : (flags.format ?? 'text');
  const connection = format === 'mermaid' ? undefined : knownConnection(flags);
  return describeTopology(compiled, format, connection === undefined ? undefined : await readTopicConfigs(compiled.topics, connection));
}

/** The cluster a bootstrap flag, ONCEFLOW_BOOTSTRAP or `dev up` names; none is no error: describe needs no broker. */
function knownConnection(flags: ConnectionFlags): Connection | undefined {
  try {
    return resolveConnection(flags);
  } catch (e) {
    if (e instanceof BootstrapMissingError) return undefined;
    throw e;
  }
}

/** `write` defaults to stdout; tests pass their own. */
export function registerDescribe(program: Command, io: { readonly write?: (text: string) => void } = {}): void {
  const write = io.write ?? ((text: string) => void process.stdout.write(text));
  const command = defineCommand(program, 'describe')
    .option('--json', 'same as --format json')
    .addOption(new Option('--format <format>', 'output format').choices([...DESCRIBE_FORMATS]).default('text'))
    .option('--app-id <id>', "overrides the topology's app id (changes internal topic names)")
    .option('--no-typecheck', 'load the topology without type-checking it first');
  addClientOptions(command);
  command.action(async (file: string, flags: DescribeFlags) => {
    write(`${await describeFile(file, flags)}\n`);
  });
}
