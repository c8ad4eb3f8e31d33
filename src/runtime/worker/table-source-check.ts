import { compactionFix, keepsEveryRow } from '../../graph/table-source-topics.ts';
import type { TopicConfigAccess } from '../base/client-supplier.ts';
import type { WorkerEvent } from '../base/worker-events.ts';

/**
 * Warns about each table source topic (`builder.table(topic)`, `globalTable(topic)`) whose
 * cleanup.policy lets the broker delete rows by time or size. The topic is the user's, so the worker
 * neither changes it nor stops; and where its configs cannot be read (a listener the raw
 * DescribeConfigs request cannot speak, missing DESCRIBE_CONFIGS) nothing is said rather than a guess.
 */
export async function checkTableSourceCompaction(topics: readonly string[], access: TopicConfigAccess | string | undefined, emit: (e: WorkerEvent) => void): Promise<void> {
  if (topics.length === 0 || access === undefined || typeof access === 'string') return;
  let described: ReadonlyMap<string, ReadonlyMap<string, string>>;
  try {
    described = await access.describe(topics, ['cleanup.policy']);
  } catch {
    return;
  }
  for (const topic of topics) {
    const policy = described.get(topic)?.get('cleanup.policy');
    if (policy !== undefined && !keepsEveryRow(policy)) emit({ type: 'table-topic-not-compacted', topic, policy, fix: compactionFix(topic) });
  }
}
