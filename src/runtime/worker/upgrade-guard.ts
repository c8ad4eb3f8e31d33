// The start check of a new version against the state the running (or last-run) one left: the
// topology's fingerprint against the one recorded in `<appId>-topology` (kafka/topology-record.ts).
import { existsSync, readdirSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import { OnceflowError } from '../../errors.ts';
import type { TopologyFingerprint } from '../../graph/fingerprint.ts';
import { compareFingerprints, formatChanges, unresolvedChanges, type TopologyChange } from '../../graph/fingerprint-compare.ts';
import { formatGeneratedName, generatedNames } from '../../graph/generated-names.ts';
import { TOPOLOGY_RECORD_CONFIG } from '../../graph/internal-topic-configs.ts';
import type { RecordedTopology, TopologyRecordAccess } from '../../kafka/topology-record.ts';
import type { TopicConfigAccess } from '../base/client-supplier.ts';
import type { ResolvedWorkerConfig } from '../base/config.ts';
import type { WorkerEvent } from '../base/worker-events.ts';
import { auditInternalTopics } from './internal-topic-audit.ts';

/** A start of a topology that the recorded state does not fit, without `--reset-state` for it or a new application id. */
export class TopologyIncompatibleError extends OnceflowError {
  readonly code = 'TOPOLOGY_INCOMPATIBLE';
  constructor(
    message: string,
    readonly changes: readonly TopologyChange[],
  ) {
    super(message);
  }
}

/** `--reset-state` named a store that neither the topology nor the recorded one has: a typo would otherwise pass silently. */
export class ResetStateUnknownStoreError extends OnceflowError {
  readonly code = 'RESET_STATE_UNKNOWN_STORE';
}

export interface UpgradeGuardParts {
  readonly config: Pick<ResolvedWorkerConfig, 'appId' | 'instanceId' | 'stateDir'>;
  readonly transactionalId: string;
  readonly records: TopologyRecordAccess;
  readonly topicConfigs: TopicConfigAccess | string | undefined;
  readonly fingerprint: (partitions: ReadonlyMap<string, number>) => TopologyFingerprint;
  /** The stores `--reset-state` names: their state is dropped when a change needs it. */
  readonly resetStores: ReadonlySet<string>;
  readonly emit: (event: WorkerEvent) => void;
}

/**
 * Compares the topology with the recorded one before any internal topic is created: throws
 * TOPOLOGY_INCOMPATIBLE naming each change left unresolved, else resets the stores `--reset-state`
 * names that a change needs reset (their changelogs deleted, this replica's local state of their
 * sub-topology removed). Returns what `record` writes once the start passed.
 */
export async function checkUpgrade(parts: UpgradeGuardParts, partitions: ReadonlyMap<string, number>): Promise<RecordedTopology | undefined> {
  const next = parts.fingerprint(partitions);
  for (const g of generatedNames(next)) parts.emit({ type: 'generated-name', what: g.what, name: g.name, stage: g.stage, message: formatGeneratedName(g) });
  const recorded = await parts.records.read();
  const known = new Set([...next.stores, ...(recorded?.fingerprint.stores ?? [])].map((s) => s.name));
  const unknown = [...parts.resetStores].filter((s) => !known.has(s));
  if (unknown.length > 0) throw new ResetStateUnknownStoreError(`--reset-state ${unknown.join(', ')}: no such store in the topology or in the one recorded in ${parts.records.topic} (stores: ${[...known].join(', ') || 'none'})`);
  const record: RecordedTopology = { fingerprint: next, recordedAt: new Date().toISOString(), by: parts.transactionalId };
  if (recorded === undefined) {
    parts.emit({ type: 'topology-checked', first: true, changes: [] });
    return record;
  }
  await auditInternalTopics([{ name: parts.records.topic, internal: true, config: TOPOLOGY_RECORD_CONFIG }], parts.topicConfigs, parts.emit);
  const changes = compareFingerprints(recorded.fingerprint, next);
  const left = unresolvedChanges(changes, parts.resetStores);
  if (left.length > 0) {
    throw new TopologyIncompatibleError(
      `the topology does not fit the state its running version left (recorded in ${parts.records.topic} by ${recorded.by} at ${recorded.recordedAt}); nothing was consumed. ${formatChanges(left).join(' | ')}. \`onceflow upgrade check <topology>\` lists every change`,
      left,
    );
  }
  await resetStores(parts, changes, next);
  parts.emit({ type: 'topology-checked', first: false, changes: formatChanges(changes) });
  return changes.length === 0 ? undefined : record;
}

async function resetStores(parts: UpgradeGuardParts, changes: readonly TopologyChange[], next: TopologyFingerprint): Promise<void> {
  const ownPrefix = `${parts.config.appId}-`;
  for (const change of changes) {
    if (change.classification === 'compatible') continue;
    const named = [change.store, change.formerStore].filter((s): s is string => s !== undefined && parts.resetStores.has(s));
    if (named.length === 0) continue;
    const store = next.stores.find((s) => s.name === change.store);
    // A table read straight from a topic has that (the user's) topic as its changelog: never deleted.
    const changelogs = [store?.changelogTopic, change.formerChangelog].filter((t): t is string => t !== undefined && t.startsWith(ownPrefix) && t.endsWith('-changelog'));
    await parts.records.deleteTopics(changelogs);
    if (store !== undefined) removeLocalState(parts.config, store.subtopology);
    parts.emit({ type: 'store-reset', store: change.store ?? named[0]!, changelogs, reason: change.what });
  }
}

/** This replica's persistent task directories (`<stateDir>/<appId>/<instanceId>/<subtopology>_<partition>`) of one sub-topology. */
function removeLocalState(config: UpgradeGuardParts['config'], subtopology: number): void {
  const dir = join(config.stateDir, config.appId, config.instanceId);
  if (!existsSync(dir)) return;
  for (const task of readdirSync(dir)) if (task.startsWith(`${subtopology}_`)) rmSync(join(dir, task), { recursive: true, force: true });
}
