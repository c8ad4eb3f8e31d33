import type { TopicKind } from './types.ts';

/**
 * The topic configs each kind of internal topic is created with, and which of them the worker insists
 * on for a topic that already exists (runtime/internal-topic-audit.ts). Every record onceflow writes
 * keeps the timestamp of the input record it came from, so a backfill of month-old input writes
 * month-old timestamps into these topics: any of them that the broker trims by time (retention.ms
 * measured against record timestamps) would lose records it has not been read from yet, or the state
 * a restore needs. The table in docs/operations.md says the same per kind.
 */

/**
 * Kafka Streams' RepartitionTopicConfig: never trimmed by time or size (the worker deletes what its
 * group has committed past: runtime/repartition-purge.ts); small segments, so that a purge frees disk
 * soon (the broker deletes whole segments only).
 */
const REPARTITION: Readonly<Record<string, string>> = {
  'cleanup.policy': 'delete',
  'retention.ms': '-1',
  'retention.bytes': '-1',
  'segment.bytes': String(50 * 1024 * 1024),
  'segment.ms': String(10 * 60_000),
};

/**
 * Every store, the windowed, session and join-window ones included, writes a tombstone for an entry it
 * drops (a window past its grace, an expired dedupe id, an emitted suppress buffer entry), so
 * compaction alone bounds the changelog; `compact,delete` with a time retention, Kafka Streams' choice
 * for windowed stores, would delete a backfill's still-open windows at the next retention check.
 */
const CHANGELOG: Readonly<Record<string, string>> = {
  'cleanup.policy': 'compact',
};

/**
 * A dead letter keeps the failed record's timestamp, which in a backfill is a month old: under the
 * topic's own CreateTime retention it would be deleted at the next retention check. LogAppendTime
 * starts the retention when the record was dead-lettered (the original record's time is not needed:
 * `dlq replay` writes with the time of the replay). Never compacted: two dead letters of one key are
 * two records.
 */
const DEAD_LETTER: Readonly<Record<string, string>> = {
  'cleanup.policy': 'delete',
  'message.timestamp.type': 'LogAppendTime',
};

/**
 * The application's topology record (`<appId>-topology`, kafka/topology-record.ts): one key, rewritten at
 * each start; never trimmed by time, since a version that ran for a year must still be found by the next.
 */
export const TOPOLOGY_RECORD_CONFIG: Readonly<Record<string, string>> = {
  'cleanup.policy': 'compact',
};

const BY_KIND: Partial<Record<TopicKind, Readonly<Record<string, string>>>> = {
  repartition: REPARTITION,
  changelog: CHANGELOG,
  'dead-letter': DEAD_LETTER,
};

/** Configs an internal topic of this kind is created with (empty for kinds onceflow does not create). */
export function internalTopicConfig(kind: TopicKind): Readonly<Record<string, string>> {
  return BY_KIND[kind] ?? {};
}

/**
 * The settings of a config map that decide whether records can be lost: an existing topic must carry
 * exactly these values. Segment sizes only decide how soon disk is freed.
 */
export const DATA_SAFETY_SETTINGS: readonly string[] = ['cleanup.policy', 'retention.ms', 'retention.bytes', 'message.timestamp.type'];
