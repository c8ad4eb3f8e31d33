import type { Serde, SerdeContext } from '../serdes/serde.ts';
import type { RetryPolicy } from '../dsl/types.ts';
import { CoPartitionError, MissingPartitionCountError } from './errors.ts';
import type { CoPartitionGroup, CompiledGlobalTable, CompiledNode, CompiledStore, CompiledSubtopology, PartitionPlan, SerdeUsage, TaskPlan, TopicRequirement } from './types.ts';

export interface CompiledTopologyInit {
  readonly appId: string;
  readonly sourceFile?: string;
  readonly deadLetterTopic: string;
  readonly retry: RetryPolicy;
  readonly unknownErrors: 'permanent' | 'retriable';
  readonly nodePolicies: ReadonlyMap<string, RetryPolicy>;
  readonly subtopologies: readonly CompiledSubtopology[];
  readonly stores: readonly CompiledStore[];
  readonly topics: readonly TopicRequirement[];
  readonly copartitionGroups?: readonly CoPartitionGroup[];
  readonly globalTables?: readonly CompiledGlobalTable[];
}

/** Backoff before retry number `attempt` (1-based), before jitter. */
export function baseBackoffMs(policy: RetryPolicy, attempt: number): number {
  return Math.min(policy.maxBackoffMs, policy.initialBackoffMs * 2 ** (attempt - 1));
}

/** A validated, planned topology: what the worker runs and `describe` prints. Immutable. */
export class CompiledTopology implements TaskPlan {
  readonly appId: string;
  readonly sourceFile: string | undefined;
  readonly deadLetterTopic: string;
  /** The topology-wide retry policy (effect stages may override theirs). */
  readonly retry: RetryPolicy;
  readonly unknownErrors: 'permanent' | 'retriable';
  readonly subtopologies: readonly CompiledSubtopology[];
  readonly nodes: ReadonlyMap<string, CompiledNode>;
  readonly stores: ReadonlyMap<string, CompiledStore>;
  /** Every topic the application reads or writes, internal ones included. */
  readonly topics: readonly TopicRequirement[];
  /** The joins' inputs that must be co-partitioned. */
  readonly copartitionGroups: readonly CoPartitionGroup[];
  readonly globalTables: readonly CompiledGlobalTable[];
  readonly #policies: ReadonlyMap<string, RetryPolicy>;
  readonly #readerOf: ReadonlyMap<string, number>;

  constructor(init: CompiledTopologyInit) {
    this.appId = init.appId;
    this.sourceFile = init.sourceFile;
    this.deadLetterTopic = init.deadLetterTopic;
    this.retry = init.retry;
    this.unknownErrors = init.unknownErrors;
    this.subtopologies = init.subtopologies;
    this.nodes = new Map(init.subtopologies.flatMap((s) => s.nodes.map((n) => [n.name, n] as const)));
    this.stores = new Map(init.stores.map((s) => [s.name, s]));
    this.topics = init.topics;
    this.copartitionGroups = init.copartitionGroups ?? [];
    this.globalTables = init.globalTables ?? [];
    this.#policies = init.nodePolicies;
    this.#readerOf = new Map(init.subtopologies.flatMap((s) => s.sourceTopics.map((t) => [t, s.id] as const)));
    Object.freeze(this);
  }

  /** Topics the worker subscribes to: external sources and repartition topics. */
  get inputTopics(): readonly string[] {
    return [...this.#readerOf.keys()];
  }

  /** The sub-topology whose tasks consume `topic`, if any. */
  subtopologyOf(topic: string): number | undefined {
    return this.#readerOf.get(topic);
  }

  retryPolicyFor(node: string): RetryPolicy {
    return this.#policies.get(node) ?? this.retry;
  }

  /** Every (serde, topic, role) in use, once, so the worker can `prepare` them all at start. */
  serdeUsages(): SerdeUsage[] {
    const out: SerdeUsage[] = [];
    const seen = new Set<string>();
    const ids = new Map<Serde<unknown>, number>();
    const add = (serde: Serde<unknown> | undefined, topic: string, role: SerdeContext['role']): void => {
      if (!serde) return;
      const id = ids.get(serde) ?? ids.set(serde, ids.size).get(serde)!;
      const k = `${id}\u0000${topic}\u0000${role}`;
      if (seen.has(k)) return;
      seen.add(k);
      out.push({ serde, ctx: { topic, role } });
    };
    for (const n of this.nodes.values()) {
      if (n.topic === undefined) continue;
      add(n.keySerde, n.topic, 'key');
      add(n.valueSerde, n.topic, 'value');
    }
    for (const s of this.stores.values()) {
      add(s.keySerde, s.changelogTopic, 'key');
      add(s.valueSerde, s.changelogTopic, 'value');
    }
    for (const g of this.globalTables) {
      add(g.keySerde, g.topic, 'key');
      add(g.valueSerde, g.topic, 'value');
    }
    return out;
  }

  /**
   * Worst-case backoff one input record can spend sleeping: every stage of the largest sub-topology
   * retrying to exhaustion with maximal jitter. Compare it with the transaction timeout.
   */
  totalRetryBudgetMs(): number {
    let worst = 0;
    for (const sub of this.subtopologies) {
      let total = 0;
      for (const n of sub.nodes) {
        if (n.kind === 'source' || n.kind === 'repartitionSource') continue;
        const p = this.retryPolicyFor(n.name);
        for (let a = 1; a < p.maxAttempts; a++) total += baseBackoffMs(p, a);
      }
      worst = Math.max(worst, total);
    }
    return worst;
  }

  /**
   * Fills in partition counts from the external source topics' counts: a sub-topology has as many
   * tasks as its widest input; a repartition topic gets the task count of the sub-topology that writes
   * it (or of its reader, if wider); a changelog gets its owner's task count. The dead-letter topic
   * gets the largest task count.
   */
  resolvePartitions(sourcePartitions: ReadonlyMap<string, number> | Readonly<Record<string, number>>): PartitionPlan {
    const external = sourcePartitions instanceof Map ? sourcePartitions : new Map(Object.entries(sourcePartitions));
    const counts = new Map<string, number>();
    for (const t of this.topics) {
      if (t.kind !== 'source') continue;
      const c = external.get(t.name);
      if (c === undefined) throw new MissingPartitionCountError(t.name);
      counts.set(t.name, c);
    }
    const tasks = new Map<number, number>();
    // a stream.repartition({ partitions }) topic has the count it was given, whatever its writer and reader have
    const pinned = new Map(this.topics.filter((t) => t.kind === 'repartition' && t.partitions !== undefined).map((t) => [t.name, t.partitions!] as const));
    // the topic graph is acyclic, so as many passes as sub-topologies reach the fixpoint
    for (let pass = 0; pass <= this.subtopologies.length; pass++) {
      for (const sub of this.subtopologies) {
        let n = 0;
        for (const t of sub.sourceTopics) n = Math.max(n, counts.get(t) ?? 0);
        tasks.set(sub.id, n);
      }
      for (const sub of this.subtopologies) {
        for (const node of sub.nodes) {
          if (node.kind !== 'repartitionSink') continue;
          const reader = this.#readerOf.get(node.topic!)!;
          // a join's repartitioned side takes the partition count of the topics it is joined with
          const joined = this.copartitionGroups.find((g) => g.subtopology === reader)?.topics.filter((t) => external.has(t));
          const fixed = joined !== undefined && joined.length > 0 ? Math.max(...joined.map((t) => counts.get(t)!)) : undefined;
          counts.set(node.topic!, pinned.get(node.topic!) ?? fixed ?? Math.max(tasks.get(sub.id) ?? 0, tasks.get(reader) ?? 0));
        }
      }
    }
    for (const g of this.copartitionGroups) {
      const [first, ...rest] = g.topics.map((topic) => ({ topic, partitions: counts.get(topic)! }));
      const other = rest.find((t) => t.partitions !== first!.partitions);
      if (other !== undefined) throw new CoPartitionError(g.join, first!, other);
    }
    const widest = Math.max(1, ...tasks.values());
    const topics = this.topics.map((t): TopicRequirement => {
      switch (t.kind) {
        case 'source':
        case 'repartition':
          return { ...t, partitions: counts.get(t.name)! };
        case 'changelog':
          return { ...t, partitions: tasks.get(t.subtopology!)! };
        case 'dead-letter':
          return { ...t, partitions: widest };
        default: {
          const c = external.get(t.name);
          return c === undefined ? t : { ...t, partitions: c };
        }
      }
    });
    return { topics, tasksPerSubtopology: tasks };
  }
}
