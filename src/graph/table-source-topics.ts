import type { CompiledGlobalTable, CompiledStore } from './types.ts';

// A table read straight from a topic (`builder.table(topic)`, `globalTable(topic)`) has no changelog
// of its own: the topic is the changelog, and a restore rebuilds the table from it. Under
// cleanup.policy=delete the broker's time retention drops rows nobody updated for a week, and the
// restored table silently misses them; only compaction keeps the last value of every key.

/** The topics the application's tables are restored from, which it does not own. */
export function tableSourceTopics(topology: { readonly stores?: ReadonlyMap<string, CompiledStore>; readonly globalTables?: readonly CompiledGlobalTable[] }): string[] {
  const fromStores = [...(topology.stores?.values() ?? [])].filter((s) => s.sourceTopicChangelog === true).map((s) => s.changelogTopic);
  return [...new Set([...fromStores, ...(topology.globalTables ?? []).map((g) => g.topic)])];
}

/** A `cleanup.policy` that keeps every key's last value forever: compaction without time or size deletion. */
export function keepsEveryRow(cleanupPolicy: string): boolean {
  const policies = new Set(cleanupPolicy.split(',').map((p) => p.trim()));
  return policies.has('compact') && !policies.has('delete');
}

/** The two ways to make a table's source topic compacted, as a user would type them. */
export function compactionFix(topic: string): string {
  return `kafka-configs.sh --bootstrap-server <host:port> --alter --entity-type topics --entity-name ${topic} --add-config cleanup.policy=compact (or create it with \`onceflow topics create ${topic} --compact\`)`;
}
