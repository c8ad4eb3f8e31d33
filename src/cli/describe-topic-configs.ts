import type { CompiledTopology } from '../graph/compiled.ts';
import { compactionFix, keepsEveryRow, tableSourceTopics } from '../graph/table-source-topics.ts';
import type { TopicRequirement } from '../graph/types.ts';
import { withAdmin } from '../kafka/admin.ts';
import { canDescribeConfigs, describeTopicConfigs } from '../kafka/topic-configs.ts';
import type { Connection } from './connection.ts';

// `describe` prints each topic's configs. Without a broker they are the topology's intent (what the
// worker creates internal topics with); given one, a topic that exists shows what the broker
// applies, because a user's topic may differ from the intent, and that difference is what matters.

/** What the broker said about the topology's topics, or why it was not asked. */
export type TopicConfigReading =
  | { readonly from: string; readonly topics: ReadonlyMap<string, ReadonlyMap<string, string>> }
  | { readonly unread: string };

const TIMEOUT_MS = 5_000;

/** The configs `describe` shows of a topic: those the topology sets, or its cleanup.policy. */
function intendedConfig(t: TopicRequirement): Readonly<Record<string, string>> {
  return t.config ?? { 'cleanup.policy': t.cleanupPolicy };
}

/** Reads the shown configs of the topics that exist; topics absent from the answer are not created yet. */
export async function readTopicConfigs(topics: readonly TopicRequirement[], connection: Pick<Connection, 'bootstrap' | 'clientOptions'>): Promise<TopicConfigReading> {
  const { bootstrap, clientOptions } = connection;
  if (!canDescribeConfigs(clientOptions)) return { unread: `security.protocol ${String(clientOptions['security.protocol'])}: topic configs are read on plaintext listeners only` };
  try {
    const existing = new Set(await withAdmin(bootstrap, (admin) => admin.listTopics({ timeout: TIMEOUT_MS }), clientOptions));
    const present = topics.map((t) => t.name).filter((name) => existing.has(name));
    const names = [...new Set(topics.flatMap((t) => Object.keys(intendedConfig(t))))];
    return { from: bootstrap, topics: await describeTopicConfigs(bootstrap, present, names, { timeoutMs: TIMEOUT_MS }) };
  } catch (e) {
    return { unread: `${bootstrap}: ${e instanceof Error ? e.message : String(e)}` };
  }
}

/** The broker's value of each shown config of a topic it has; undefined for a topic it does not have. */
export function brokerConfig(t: TopicRequirement, reading: TopicConfigReading | undefined): Record<string, string> | undefined {
  const read = reading !== undefined && 'topics' in reading ? reading.topics.get(t.name) : undefined;
  if (read === undefined) return undefined;
  return Object.fromEntries(Object.keys(intendedConfig(t)).flatMap((name) => (read.has(name) ? [[name, read.get(name)!]] : [])));
}

/** The `Topics:` section of `describe`; without a reading, the intent only, as it always was. */
export function topicLines(c: CompiledTopology, reading?: TopicConfigReading): string[] {
  const header = reading === undefined ? 'Topics:' : 'topics' in reading ? `Topics (configs as the broker at ${reading.from} applies them; "intended" marks a topic it does not have yet):` : `Topics (configs as the topology intends them; not read from the broker: ${reading.unread}):`;
  const lines = [header];
  for (const t of c.topics) {
    const read = brokerConfig(t, reading);
    const configs = Object.entries(read ?? intendedConfig(t)).map(([k, v]) => `${k}=${v}`);
    const parts = [t.kind, t.internal ? 'internal' : 'external', ...configs];
    if (reading !== undefined && 'topics' in reading && read === undefined) parts.push('intended');
    if (t.partitions !== undefined) parts.push(`partitions=${t.partitions}`);
    else if (t.subtopology !== undefined) parts.push(`partitions=tasks of sub-topology ${t.subtopology}`);
    lines.push(`  ${t.name} (${parts.join(', ')})`);
  }
  return lines;
}

/** Table source topics the broker has with a cleanup.policy that deletes rows (the worker warns the same at start). */
export function uncompactedTableSources(c: CompiledTopology, reading: TopicConfigReading | undefined): string[] {
  if (reading === undefined || !('topics' in reading)) return [];
  return tableSourceTopics(c).flatMap((topic) => {
    const policy = reading.topics.get(topic)?.get('cleanup.policy');
    return policy === undefined || keepsEveryRow(policy) ? [] : [`table source topic ${topic} has cleanup.policy=${policy}: the broker's retention deletes rows a restore of the table needs. Fix: ${compactionFix(topic)}`];
  });
}
