// Where an application keeps the fingerprint of the topology it runs: a compacted topic of its own,
// `<appId>-topology` (one partition, one key), written by each worker once its start check passed and
// read by the next version's start check and by `onceflow upgrade check`.
import type { TopologyFingerprint } from '../graph/fingerprint.ts';
import { TOPOLOGY_RECORD_CONFIG } from '../graph/internal-topic-configs.ts';
import { deleteTopicsAndWait, ensureTopics, withAdmin, type ClientOptions } from './admin.ts';
import { produceRecords } from './produce-records.ts';
import { readTopic } from './read-topic.ts';

export const topologyRecordTopic = (appId: string): string => `${appId}-topology`;

/** The one key of the topic: compaction keeps the latest fingerprint only. */
const KEY = 'fingerprint';

export interface RecordedTopology {
  readonly fingerprint: TopologyFingerprint;
  /** ISO time of the write. */
  readonly recordedAt: string;
  /** The transactional id of the worker that wrote it. */
  readonly by: string;
}

export interface TopologyRecordAccess {
  readonly topic: string;
  /** The latest record; undefined when none was written (a first deploy, or after `onceflow reset`). */
  read(): Promise<RecordedTopology | undefined>;
  write(record: RecordedTopology): Promise<void>;
  /** Deletes topics that exist (a reset store's changelog), waiting until the metadata no longer lists them. */
  deleteTopics(names: readonly string[]): Promise<void>;
}

function parse(value: Buffer): RecordedTopology | undefined {
  try {
    const r = JSON.parse(value.toString('utf8')) as Partial<RecordedTopology>;
    return typeof r.fingerprint === 'object' && r.fingerprint !== null && typeof r.recordedAt === 'string' ? (r as RecordedTopology) : undefined;
  } catch {
    // Not one of ours: anyone with write access to the application's topics could add to it.
    return undefined;
  }
}

export function kafkaTopologyRecord(bootstrap: string, appId: string, kafka: ClientOptions): TopologyRecordAccess {
  const topic = topologyRecordTopic(appId);
  return {
    topic,
    async read() {
      const exists = await withAdmin(bootstrap, async (admin) => (await admin.listTopics({ timeout: 10_000 })).includes(topic), kafka);
      if (!exists) return undefined;
      let latest: RecordedTopology | undefined;
      // Under the application's own group id, which its principal may use (a throw-away group would need an ACL
      // of its own on a secured cluster): the reader is assigned, never joins, and commits nothing.
      for (const r of await readTopic(bootstrap, topic, { clientOptions: { ...kafka, 'group.id': appId }, idleMs: 10_000 })) {
        if (r.key?.toString('utf8') !== KEY || r.value === null) continue;
        latest = parse(r.value) ?? latest;
      }
      return latest;
    },
    async write(record) {
      await withAdmin(bootstrap, (admin) => ensureTopics(admin, [{ name: topic, partitions: 1, compact: true, config: TOPOLOGY_RECORD_CONFIG }]), kafka);
      await produceRecords(bootstrap, topic, [{ key: Buffer.from(KEY), value: Buffer.from(JSON.stringify(record)) }], { ...kafka });
    },
    async deleteTopics(names) {
      if (names.length === 0) return;
      await withAdmin(
        bootstrap,
        async (admin) => {
          const existing = new Set(await admin.listTopics({ timeout: 10_000 }));
          await deleteTopicsAndWait(admin, names.filter((n) => existing.has(n)));
        },
        kafka,
      );
    },
  };
}
