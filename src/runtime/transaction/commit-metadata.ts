/**
 * The metadata string stored with every committed offset: who committed it, when, and the task's
 * stream time. Kafka keeps it beside the offset, atomically with it, so `onceflow status` can tell
 * each member's last commit from the group's offsets alone, and a task resumed elsewhere after a
 * crash or a rebalance closes windows and drops late records exactly as the old owner would have
 * (Kafka Streams keeps its partition time there for the same reason).
 */
export interface CommitMetadata {
  /** The transactional id (or client id) of the worker that committed. */
  readonly by: string;
  /** Wall-clock time of the commit, in ms. */
  readonly at: number;
  /** The task's stream time when it committed; absent before its first record. */
  readonly streamTime?: number;
}

const PREFIX = 'onceflow:v1';

export function formatCommitMetadata(m: CommitMetadata): string {
  const base = `${PREFIX};by=${m.by};at=${m.at}`;
  return m.streamTime !== undefined && Number.isFinite(m.streamTime) ? `${base};st=${m.streamTime}` : base;
}

/** Undefined for offsets committed by anything else (a plain consumer, a reset tool). */
export function parseCommitMetadata(raw: string | null | undefined): CommitMetadata | undefined {
  // librdkafka stores the string with its NUL terminator; other clients do not.
  const text = raw?.replace(/\u0000+$/, '');
  if (!text?.startsWith(`${PREFIX};`)) return undefined;
  const fields = new Map(text.slice(PREFIX.length + 1).split(';').map((kv) => kv.split('=', 2) as [string, string | undefined]));
  const by = fields.get('by');
  const at = Number(fields.get('at'));
  if (!by || !Number.isFinite(at)) return undefined;
  const st = fields.get('st');
  const streamTime = st === undefined ? Number.NaN : Number(st);
  return Number.isFinite(streamTime) ? { by, at, streamTime } : { by, at };
}
