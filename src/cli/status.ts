import type { Command } from 'commander';
import { defineCommand } from './commands.ts';
import { KafkaJS } from '@confluentinc/kafka-javascript';
import { OnceflowError } from '../errors.ts';
import { withAdmin, type AdminClient } from '../kafka/admin.ts';
import { recordsBehind } from '../kafka/lag.ts';
import { ReadableProbe } from '../kafka/readable-probe.ts';
import { loadTopology } from '../dsl/load.ts';
import { parseCommitMetadata, type CommitMetadata } from '../runtime/transaction/commit-metadata.ts';
import { parseWorkerConfig, type WorkerConfig } from '../runtime/base/config.ts';
import { resolveConfigSources, type ConfigFlags } from './config-sources.ts';
import { bootstrapSource, devConnection, requireReachable } from './connection.ts';
import { describeGroup } from '../kafka/groups.ts';

export class StatusError extends OnceflowError {
  readonly code = 'GROUP_NOT_FOUND';
  constructor(readonly groupId: string) {
    super(`consumer group ${groupId} has no members and no committed offsets: is the app id right, and has a worker ever committed?`);
  }
}

export interface MemberStatus {
  readonly memberId: string;
  readonly clientId: string;
  readonly host: string;
  readonly partitions: readonly string[];
  /** Newest commit among the member's partitions, from the commit metadata the worker stores with each offset. */
  readonly lastCommitAt: number | undefined;
}

export interface PartitionStatus {
  readonly topic: string;
  readonly partition: number;
  /** Next offset the group reads; undefined = nothing committed (a new owner starts at the earliest record). */
  readonly committed: number | undefined;
  /** Last stable offset (read_committed end): what a worker can read now. */
  readonly end: number;
  /** `recordsBehind`: records still to read, commit markers and aborted records not counted (0 when caught up). */
  readonly lag: number | undefined;
  readonly clientId: string | undefined;
  readonly host: string | undefined;
  readonly lastCommitAt: number | undefined;
  /** The transactional id that made the last commit (a fenced zombie never appears here). */
  readonly committedBy: string | undefined;
}

export interface GroupStatus {
  readonly groupId: string;
  readonly state: string;
  readonly members: readonly MemberStatus[];
  readonly partitions: readonly PartitionStatus[];
}

const STATES: Readonly<Record<number, string>> = { 0: 'Unknown', 1: 'PreparingRebalance', 2: 'CompletingRebalance', 3: 'Stable', 4: 'Dead', 5: 'Empty' };
const UNKNOWN = 0;
const DEAD = 4;

/** Where groupStatus looks past commit markers; a ReadableProbe, or a script in a test. */
export type LagProbe = Pick<ReadableProbe, 'firstReadable'>;

/**
 * Members, assignment, committed and end offsets and lag of one application's consumer group. End
 * offsets are read_committed (last stable offsets); lag is `recordsBehind`, with `probe` looking past
 * the commit markers a transactional writer leaves, so a caught-up group shows 0 on every partition.
 */
export async function groupStatus(admin: AdminClient, groupId: string, probe: LagProbe): Promise<GroupStatus> {
  const described = await describeGroup(admin, groupId);
  const committed = new Map<string, number>();
  const commitMeta = new Map<string, CommitMetadata>();
  const topics = new Set<string>();
  // A group the coordinator does not know makes librdkafka's admin OffsetFetch crash the process
  // (see GroupOffsets); one it describes has a loaded coordinator and nothing to crash on.
  const known = described !== undefined && described.state !== DEAD && described.state !== UNKNOWN;
  for (const t of known ? await admin.fetchOffsets({ groupId, requireStableOffsets: true }) : []) {
    topics.add(t.topic);
    for (const p of t.partitions) {
      const key = `${t.topic}-${p.partition}`;
      if (Number(p.offset) >= 0) committed.set(key, Number(p.offset));
      const meta = parseCommitMetadata(p.metadata);
      if (meta) commitMeta.set(key, meta);
    }
  }
  const members: MemberStatus[] = (described?.members ?? []).map((m) => {
    const partitions = (m.assignment?.topicPartitions ?? []).map((tp) => `${tp.topic}-${tp.partition}`);
    const times = partitions.flatMap((p) => commitMeta.get(p)?.at ?? []);
    return { memberId: m.memberId, clientId: m.clientId, host: m.clientHost.replace(/^\//, ''), partitions, lastCommitAt: times.length > 0 ? Math.max(...times) : undefined };
  });
  const owner = new Map<string, MemberStatus>();
  for (const m of members) for (const p of m.partitions) owner.set(p, m);

  for (const m of described?.members ?? []) for (const tp of m.assignment?.topicPartitions ?? []) topics.add(tp.topic);

  const offsets: { topic: string; partition: number; from: number | undefined; end: number }[] = [];
  for (const topic of [...topics].sort()) {
    const ends = await admin.fetchTopicOffsets(topic, { isolationLevel: KafkaJS.IsolationLevel.READ_COMMITTED });
    for (const e of ends.sort((a, b) => a.partition - b.partition)) offsets.push({ topic, partition: e.partition, from: committed.get(`${topic}-${e.partition}`), end: Number(e.offset) });
  }
  const firstReadable = await probe.firstReadable(offsets.flatMap((o) => (o.from === undefined ? [] : [{ ...o, from: o.from }])));
  const partitions = offsets.map(({ topic, partition, from, end }): PartitionStatus => {
    const key = `${topic}-${partition}`;
    const m = owner.get(key);
    const meta = commitMeta.get(key);
    const lag = from === undefined ? undefined : recordsBehind(from, end, firstReadable.get(key));
    return { topic, partition, committed: from, end, lag, clientId: m?.clientId, host: m?.host, lastCommitAt: meta?.at, committedBy: meta?.by };
  });
  return { groupId, state: STATES[described?.state ?? 0] ?? String(described?.state), members, partitions };
}

function table(header: readonly string[], rows: readonly (readonly string[])[]): string {
  const widths = header.map((h, i) => Math.max(h.length, ...rows.map((r) => (r[i] ?? '').length)));
  const line = (cells: readonly string[]) => cells.map((c, i) => c.padEnd(widths[i] ?? 0)).join('  ').trimEnd();
  return [line(header), ...rows.map(line)].join('\n');
}

const dash = (v: number | string | undefined): string => (v === undefined ? '-' : String(v));
const time = (ms: number | undefined): string => (ms === undefined ? '-' : new Date(ms).toISOString());

export function formatStatus(s: GroupStatus): string {
  const totalLag = s.partitions.reduce((n, p) => n + (p.lag ?? 0), 0);
  const out = [`group ${s.groupId}  state ${s.state}  members ${s.members.length}  partitions ${s.partitions.length}  total lag ${totalLag}`, ''];
  if (s.members.length > 0) {
    out.push(table(['MEMBER', 'CLIENT ID', 'HOST', 'PARTITIONS', 'LAST COMMIT'], s.members.map((m) => [m.memberId, m.clientId, m.host, String(m.partitions.length), time(m.lastCommitAt)])), '');
  }
  out.push(
    table(
      ['TOPIC', 'PARTITION', 'COMMITTED', 'END', 'LAG', 'CLIENT ID', 'HOST', 'LAST COMMIT', 'COMMITTED BY'],
      s.partitions.map((p) => [p.topic, String(p.partition), dash(p.committed), String(p.end), dash(p.lag), dash(p.clientId), dash(p.host), time(p.lastCommitAt), dash(p.committedBy)]),
    ),
  );
  return `${out.join('\n')}\n`;
}

export interface WatchOptions {
  readonly intervalMs?: number;
  readonly probe: LagProbe;
  readonly signal: AbortSignal;
  onUpdate(status: GroupStatus): void;
  /** A refresh that fails (a broker restarting) is reported and retried, not fatal. */
  onError?(error: unknown): void;
}

/** Refreshes until the signal aborts, with one admin connection for all refreshes. */
export async function watchStatus(admin: AdminClient, groupId: string, options: WatchOptions): Promise<void> {
  const interval = options.intervalMs ?? 2_000;
  while (!options.signal.aborted) {
    try {
      options.onUpdate(await groupStatus(admin, groupId, options.probe));
    } catch (e) {
      options.onError?.(e);
    }
    if (options.signal.aborted) break;
    await new Promise<void>((resolve) => {
      const timer = setTimeout(resolve, interval);
      options.signal.addEventListener('abort', () => {
        clearTimeout(timer);
        resolve();
      }, { once: true });
    });
  }
}

export interface StatusIo {
  out(text: string): void;
  /** Stops --watch; default: SIGINT / SIGTERM. */
  readonly signal?: AbortSignal;
}

/** The flags of a command that reads an application's group: where the broker is and which group. */
export interface GroupFlags {
  appId?: string;
  bootstrap?: string;
  config?: string;
  kafka?: string[];
  stateDir?: string;
}

interface StatusFlags extends GroupFlags {
  watch?: boolean;
  json?: boolean;
}

export function addGroupOptions(command: Command): Command {
  return command
    .option('--app-id <id>', 'the application (its consumer group id; env ONCEFLOW_APP_ID)')
    .option('--bootstrap <servers>', 'Kafka bootstrap servers (env ONCEFLOW_BOOTSTRAP)')
    .option('--config <file>', 'YAML or JSON config file')
    .option('--kafka <key=value>', 'librdkafka option, repeatable', (v: string, prev: string[] = []) => [...prev, v]);
}

/** Same layering and validation as the worker, so a group reader connects exactly as the worker does; fails early on an unreachable broker. */
export async function groupConfig(opts: GroupFlags, fallbackAppId?: string): Promise<WorkerConfig> {
  const appId = opts.appId ?? (process.env.ONCEFLOW_APP_ID === undefined ? fallbackAppId : undefined);
  const flags: ConfigFlags = {
    ...(appId !== undefined ? { appId } : {}),
    ...(opts.bootstrap !== undefined ? { bootstrap: opts.bootstrap } : {}),
    ...(opts.kafka !== undefined ? { kafka: opts.kafka } : {}),
    ...(opts.stateDir !== undefined ? { stateDir: opts.stateDir } : {}),
  };
  const dev = devConnection();
  const { input, origin } = resolveConfigSources({ ...(opts.config !== undefined ? { file: opts.config } : {}), env: process.env, flags, ...(dev ? { devCluster: dev } : {}) });
  const config = parseWorkerConfig(input);
  // Before any group call: on an unreachable broker those crashed the admin client (SIGSEGV).
  await requireReachable({ bootstrap: config.bootstrap, source: bootstrapSource(origin.bootstrap, dev), dev }, config.kafka);
  return config;
}

export function registerStatus(program: Command, io: StatusIo = { out: (t) => process.stdout.write(t) }): void {
  addGroupOptions(defineCommand(program, 'status'))
    .option('--watch', 'refresh every 2 s until interrupted')
    .option('--json', 'print the status as JSON')
    .action(async (file: string | undefined, opts: StatusFlags) => {
      const config = await groupConfig(opts, file === undefined ? undefined : (await loadTopology(file)).options.appId);
      const render = (s: GroupStatus) => (opts.json ? `${JSON.stringify(s)}\n` : formatStatus(s));
      const probe = new ReadableProbe(config.bootstrap, config.kafka);
      try {
        await withAdmin(
          config.bootstrap,
          async (admin) => {
            if (!opts.watch) {
              const s = await groupStatus(admin, config.appId, probe);
              if (s.members.length === 0 && s.partitions.length === 0) throw new StatusError(config.appId);
              io.out(render(s));
              return;
            }
            let signal = io.signal;
            if (!signal) {
              const ac = new AbortController();
              process.once('SIGINT', () => ac.abort());
              process.once('SIGTERM', () => ac.abort());
              signal = ac.signal;
            }
            await watchStatus(admin, config.appId, {
              signal,
              probe,
              onUpdate: (s) => io.out(`${opts.json ? '' : '\u001b[2J\u001b[H'}${render(s)}${opts.json ? '' : `\n(refreshed ${new Date().toISOString()}; Ctrl-C to stop)\n`}`),
              onError: (e) => io.out(`status refresh failed: ${e instanceof Error ? e.message : String(e)}\n`),
            });
          },
          config.kafka,
        );
      } finally {
        await probe.close();
      }
    });
}
