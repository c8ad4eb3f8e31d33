import type { Command } from 'commander';
import { defineCommand } from './commands.ts';
import { compile } from '../graph/compile.ts';
import type { CompiledTopology } from '../graph/compiled.ts';
import { fingerprintOf } from '../graph/fingerprint.ts';
import { compareFingerprints, formatChanges, sortChanges, type TopologyChange } from '../graph/fingerprint-compare.ts';
import { formatGeneratedName, generatedNames, type GeneratedName } from '../graph/generated-names.ts';
import { loadTopology } from '../dsl/load.ts';
import { fetchPartitionCounts, withAdmin, type ClientOptions } from '../kafka/admin.ts';
import { kafkaTopologyRecord, type RecordedTopology } from '../kafka/topology-record.ts';
import { addGroupOptions, groupConfig, type GroupFlags } from './status.ts';

interface UpgradeFlags extends GroupFlags {
  readonly json?: boolean;
}

/** What `upgrade check` found: the changes against the recorded topology, worst first. */
export interface UpgradeReport {
  readonly appId: string;
  readonly recordTopic: string;
  /** Undefined: nothing recorded (a first deploy, or after `onceflow reset`). */
  readonly recorded: Pick<RecordedTopology, 'recordedAt' | 'by'> | undefined;
  readonly changes: readonly TopologyChange[];
  readonly breaking: boolean;
  /** False when a source topic is missing: partition counts were then not compared. */
  readonly partitionsCompared: boolean;
  readonly generatedNames: readonly GeneratedName[];
}

/** The partition counts a worker would plan now: undefined while a source topic is missing. */
async function plannedPartitions(topology: CompiledTopology, bootstrap: string, kafka: ClientOptions): Promise<ReadonlyMap<string, number> | undefined> {
  const sources = topology.topics.filter((t) => t.kind === 'source' && !t.internal).map((t) => t.name);
  return withAdmin(
    bootstrap,
    async (admin) => {
      const existing = new Set(await admin.listTopics({ timeout: 10_000 }));
      if (!sources.every((t) => existing.has(t))) return undefined;
      const planned = topology.resolvePartitions(await fetchPartitionCounts(admin, sources)).topics;
      return new Map(planned.filter((t) => t.partitions !== undefined).map((t) => [t.name, t.partitions!] as const));
    },
    kafka,
  );
}

export async function upgradeReport(topology: CompiledTopology, bootstrap: string, kafka: ClientOptions): Promise<UpgradeReport> {
  const partitions = await plannedPartitions(topology, bootstrap, kafka);
  const next = fingerprintOf(topology, partitions);
  const records = kafkaTopologyRecord(bootstrap, topology.appId, kafka);
  const recorded = await records.read();
  const changes = recorded === undefined ? [] : compareFingerprints(recorded.fingerprint, next);
  return {
    appId: topology.appId,
    recordTopic: records.topic,
    recorded: recorded === undefined ? undefined : { recordedAt: recorded.recordedAt, by: recorded.by },
    changes: sortChanges(changes),
    breaking: changes.some((c) => c.classification === 'breaking'),
    partitionsCompared: partitions !== undefined,
    generatedNames: generatedNames(next),
  };
}

export function formatUpgradeReport(r: UpgradeReport): string {
  const out: string[] = [];
  if (r.recorded === undefined) {
    out.push(`application ${r.appId}: no topology recorded in ${r.recordTopic}: a first deploy (or one after \`onceflow reset\`), nothing to compare with`);
  } else {
    out.push(`application ${r.appId}: compared with the topology recorded in ${r.recordTopic} by ${r.recorded.by} at ${r.recorded.recordedAt}`);
    out.push(...(r.changes.length === 0 ? ['no change: the new version starts on the existing state as it is'] : formatChanges(r.changes).map((line) => `  ${line}`)));
    if (!r.partitionsCompared) out.push('partition counts not compared: a source topic does not exist');
    const needReset = r.changes.filter((c) => c.classification !== 'compatible' && c.store !== undefined).map((c) => c.store!);
    if (needReset.length > 0) out.push(`to start it anyway: onceflow run <topology> ${[...new Set(needReset)].map((s) => `--reset-state ${s}`).join(' ')} (each store's state is dropped), or a new --app-id`);
  }
  for (const g of r.generatedNames) out.push(`warning: ${formatGeneratedName(g)}`);
  return `${out.join('\n')}\n`;
}

export interface UpgradeIo {
  out(text: string): void;
  fail(): void;
}

export function registerUpgrade(program: Command, io: UpgradeIo = { out: (t) => process.stdout.write(t), fail: () => void (process.exitCode = 1) }): void {
  const upgrade = defineCommand(program, 'upgrade');
  addGroupOptions(upgrade.command('check <topology>').description('compare a topology file with the one the application runs (or last ran) and classify each change: compatible, state-resetting or breaking (exit 1 when one is breaking)'))
    .option('--json', 'print the report as JSON')
    .action(async (file: string, opts: UpgradeFlags) => {
      const builder = await loadTopology(file);
      const config = await groupConfig(opts, builder.options.appId);
      const report = await upgradeReport(compile(builder, { appId: config.appId }), config.bootstrap, config.kafka);
      io.out(opts.json ? `${JSON.stringify(report)}\n` : formatUpgradeReport(report));
      if (report.breaking) io.fail();
    });
}
