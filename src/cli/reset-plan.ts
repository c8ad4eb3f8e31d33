import { existsSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import { OnceflowError } from '../errors.ts';
import type { CompiledTopology } from '../graph/compiled.ts';
import type { TopicKind } from '../graph/types.ts';
import { deleteTopicsAndWait, withAdmin, type AdminClient, type ClientOptions } from '../kafka/admin.ts';
import { GroupOffsets } from '../kafka/group-offsets.ts';
import { describeGroup } from '../kafka/groups.ts';
import { topologyRecordTopic } from '../kafka/topology-record.ts';

/** `onceflow reset` while a worker of the application runs: its next commit would undo the reset, and its state would outlive it. */
export class ResetGroupActiveError extends OnceflowError {
  readonly code = 'RESET_GROUP_ACTIVE';
}

export interface OffsetReset {
  readonly topic: string;
  readonly partition: number;
  /** What the group has committed there; undefined: nothing. */
  readonly committed: number | undefined;
  /** The partition's first offset still in the log: where the group reads from after the reset. */
  readonly beginning: number;
}

export interface InternalTopic {
  readonly name: string;
  /** topology-record: `<appId>-topology` (kafka/topology-record.ts): with the state gone, the next start is a first deploy. */
  readonly kind: TopicKind | 'topology-record';
  /** False: the topology defines it but the cluster has no such topic (nothing to delete). */
  readonly exists: boolean;
}

/** What `onceflow reset` does to one application, as `--dry-run` prints it. */
export interface ResetPlan {
  readonly appId: string;
  readonly offsets: readonly OffsetReset[];
  readonly deleteTopics: readonly InternalTopic[];
  /** Topics the reset leaves as they are: the sources, the outputs, the dead-letter topic unless asked. */
  readonly keptTopics: readonly { readonly name: string; readonly kind: TopicKind }[];
  readonly stateDir: string;
  readonly stateDirExists: boolean;
}

export interface ResetTarget {
  readonly topology: CompiledTopology;
  readonly bootstrap: string;
  readonly kafka: ClientOptions;
  /** The worker's stateDir: the application's local state is `<stateDir>/<appId>`. */
  readonly stateDir: string;
  /** Delete the application's own dead-letter topic too (Kafka Streams' tool has no such topic; kept by default). */
  readonly deleteDeadLetterTopic: boolean;
}

/** Deleted: topics the topology's stages write and read back (repartition, changelog) and the application created. */
const DELETED_KINDS: readonly TopicKind[] = ['repartition', 'changelog'];

async function refuseLiveMembers(admin: AdminClient, appId: string): Promise<void> {
  const members = (await describeGroup(admin, appId))?.members ?? [];
  if (members.length === 0) return;
  const who = members.map((m) => `${m.clientId} on ${m.clientHost.replace(/^\//, '')}`).join(', ');
  throw new ResetGroupActiveError(`consumer group ${appId} has ${members.length} live member${members.length > 1 ? 's' : ''} (${who}): stop every worker of the application, then reset. Nothing was changed`);
}

/** The input partitions' committed and first offsets; the group's topics must exist (requireTopics). */
async function offsetResets(admin: AdminClient, target: ResetTarget, inputs: readonly string[]): Promise<OffsetReset[]> {
  const partitions: { topic: string; partition: number; beginning: number }[] = [];
  for (const topic of inputs) {
    for (const p of await admin.fetchTopicOffsets(topic)) partitions.push({ topic, partition: p.partition, beginning: Number(p.low) });
  }
  partitions.sort((a, b) => a.topic.localeCompare(b.topic) || a.partition - b.partition);
  const group = new GroupOffsets(target.bootstrap, target.topology.appId, target.kafka);
  try {
    const committed = new Map((await group.fetch(partitions)).map((o) => [`${o.topic}-${o.partition}`, o.offset] as const));
    return partitions.map((p) => {
      const at = committed.get(`${p.topic}-${p.partition}`) ?? -1;
      return { ...p, committed: at >= 0 ? at : undefined };
    });
  } finally {
    await group.close();
  }
}

async function planWith(admin: AdminClient, target: ResetTarget): Promise<ResetPlan> {
  const { topology } = target;
  await refuseLiveMembers(admin, topology.appId);
  const globalTopics = new Set(topology.globalTables.map((g) => g.topic));
  const deleted = (t: CompiledTopology['topics'][number]): boolean => t.internal && (DELETED_KINDS.includes(t.kind) || (t.kind === 'dead-letter' && target.deleteDeadLetterTopic));
  const existing = new Set(await admin.listTopics());
  const inputs = [...new Set(topology.topics.filter((t) => t.kind === 'source' && !t.internal && !globalTopics.has(t.name)).map((t) => t.name))].filter((t) => existing.has(t));
  const stateDir = join(target.stateDir, topology.appId);
  const record = topologyRecordTopic(topology.appId);
  return {
    appId: topology.appId,
    offsets: await offsetResets(admin, target, inputs),
    deleteTopics: [...topology.topics.filter(deleted).map((t) => ({ name: t.name, kind: t.kind, exists: existing.has(t.name) })), { name: record, kind: 'topology-record' as const, exists: existing.has(record) }],
    keptTopics: topology.topics.filter((t) => !deleted(t)).map((t) => ({ name: t.name, kind: t.kind })),
    stateDir,
    stateDirExists: existsSync(stateDir),
  };
}

/** What a reset would do, changing nothing; refuses (RESET_GROUP_ACTIVE) while the group has live members. */
export function planReset(target: ResetTarget): Promise<ResetPlan> {
  return withAdmin(target.bootstrap, (admin) => planWith(admin, target), target.kafka);
}

/**
 * Kafka Streams' application reset: the group's input offsets to the beginning, the internal topics
 * deleted, the local state directory removed, in that order. The broker itself refuses the offset
 * commit if a worker joined since the plan was made, before anything is deleted.
 */
export async function applyReset(target: ResetTarget): Promise<ResetPlan> {
  return withAdmin(
    target.bootstrap,
    async (admin) => {
      const plan = await planWith(admin, target);
      const group = new GroupOffsets(target.bootstrap, plan.appId, target.kafka);
      try {
        await group.commit(plan.offsets.map((o) => ({ topic: o.topic, partition: o.partition, offset: o.beginning })));
      } finally {
        await group.close();
      }
      await deleteTopicsAndWait(admin, plan.deleteTopics.filter((t) => t.exists).map((t) => t.name));
      rmSync(plan.stateDir, { recursive: true, force: true });
      return plan;
    },
    target.kafka,
  );
}
