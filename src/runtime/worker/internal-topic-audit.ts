import { OnceflowError } from '../../errors.ts';
import { DATA_SAFETY_SETTINGS } from '../../graph/internal-topic-configs.ts';
import type { TopicConfigAccess } from '../base/client-supplier.ts';
import type { WorkerEvent } from '../base/worker-events.ts';
import type { RuntimeTopic } from '../task/worker-topology.ts';

/**
 * An existing internal topic whose config can lose records (a repartition topic with a finite
 * retention, a changelog without compaction, ...) that the worker could neither read nor correct.
 */
export class InternalTopicConfigError extends OnceflowError {
  readonly code = 'INTERNAL_TOPIC_CONFIG_UNSAFE';
  constructor(
    message: string,
    readonly topic: string,
    readonly setting: string,
    options?: ErrorOptions,
  ) {
    super(message, options);
  }
}

/** What the audit reads of a topic: the topology's internal topics, and the application's topology record. */
export type AuditedTopic = Pick<RuntimeTopic, 'name' | 'internal' | 'config'>;

export interface ConfigCorrection {
  readonly topic: string;
  readonly setting: string;
  /** As the broker applies it now; undefined when it did not say. */
  readonly from: string | undefined;
  readonly to: string;
}

/** What must change on each existing internal topic so that it keeps what the application has not read yet. */
export function unsafeSettings(topics: readonly AuditedTopic[], described: ReadonlyMap<string, ReadonlyMap<string, string>>): ConfigCorrection[] {
  const out: ConfigCorrection[] = [];
  for (const t of topics) {
    for (const [setting, wanted] of Object.entries(t.config ?? {})) {
      if (!DATA_SAFETY_SETTINGS.includes(setting)) continue;
      const actual = described.get(t.name)?.get(setting);
      if (actual === undefined || !sameSetting(setting, actual, wanted)) out.push({ topic: t.name, setting, from: actual, to: wanted });
    }
  }
  return out;
}

/** `cleanup.policy` is a list: `delete,compact` is `compact,delete`. */
function sameSetting(setting: string, actual: string, wanted: string): boolean {
  if (setting !== 'cleanup.policy') return actual === wanted;
  const set = (v: string) => [...new Set(v.split(',').map((p) => p.trim()))].sort().join(',');
  return set(actual) === set(wanted);
}

/**
 * Holds the internal topics that existed before this start (an earlier version made them, or a
 * person) to their kind's configs: each unsafe setting is set right, and said (`topic-config-corrected`);
 * one that cannot be read or set stops the worker before it consumes anything. Where the listener
 * cannot be spoken to at all (TLS, SASL) the topics are named in a warning instead: every restart of
 * a secured deployment would otherwise fail, and topics this version created carry the configs already.
 */
export async function auditInternalTopics(existing: readonly AuditedTopic[], access: TopicConfigAccess | string | undefined, emit: (e: WorkerEvent) => void): Promise<void> {
  const held = existing.filter((t) => t.internal && Object.keys(t.config ?? {}).some((s) => DATA_SAFETY_SETTINGS.includes(s)));
  if (held.length === 0) return;
  if (access === undefined || typeof access === 'string') {
    emit({ type: 'topic-configs-unverified', topics: held.map((t) => t.name), reason: access ?? 'the client supplier cannot read topic configs' });
    return;
  }
  let failure: { topic: string; setting: string; message: string; cause: unknown } | undefined;
  let corrections: ConfigCorrection[] = [];
  try {
    corrections = unsafeSettings(held, await access.describe(held.map((t) => t.name), DATA_SAFETY_SETTINGS));
  } catch (e) {
    failure = { topic: held.map((t) => t.name).join(', '), setting: DATA_SAFETY_SETTINGS.join(', '), message: `could not be read: ${describe(e)}`, cause: e };
  }
  for (const [topic, settings] of groupByTopic(corrections)) {
    if (failure !== undefined) break;
    try {
      await access.set(topic, Object.fromEntries(settings.map((c) => [c.setting, c.to])));
      for (const c of settings) emit({ type: 'topic-config-corrected', topic, setting: c.setting, from: c.from ?? '(unknown)', to: c.to });
    } catch (e) {
      const shown = settings.map((c) => `${c.setting}=${c.from ?? '(unknown)'}`).join(', ');
      failure = { topic, setting: settings.map((c) => c.setting).join(', '), message: `is unsafe (${shown}) and could not be corrected: ${describe(e)}`, cause: e };
    }
  }
  if (failure === undefined) return;
  const fix = corrections.filter((c) => c.topic === failure!.topic).map((c) => `${c.setting}=${c.to}`);
  throw new InternalTopicConfigError(
    `internal topic ${failure.topic}: ${failure.setting} ${failure.message}. A record of a backfill (old timestamps) could be deleted before it is read. Fix: ${fix.length > 0 ? `kafka-configs.sh --alter --entity-type topics --entity-name ${failure.topic} --add-config ${fix.join(',')}` : 'grant DESCRIBE_CONFIGS and ALTER_CONFIGS on the application\'s topics (prefix <appId>-), or check their configs against docs/operations.md'}`,
    failure.topic,
    failure.setting,
    { cause: failure.cause },
  );
}

function groupByTopic(corrections: readonly ConfigCorrection[]): Map<string, ConfigCorrection[]> {
  const out = new Map<string, ConfigCorrection[]>();
  for (const c of corrections) (out.get(c.topic) ?? out.set(c.topic, []).get(c.topic)!).push(c);
  return out;
}

function describe(e: unknown): string {
  return e instanceof Error ? e.message : String(e);
}
