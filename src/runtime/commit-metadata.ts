/**
 * The metadata string stored with every committed offset: who committed it and when. Kafka keeps
 * it beside the offset, so `onceflow status` can tell each member's last commit from the group's
 * offsets alone, without asking the workers.
 */
export interface CommitMetadata {
  /** The transactional id (or client id) of the worker that committed. */
  readonly by: string;
  /** Wall-clock time of the commit, in ms. */
  readonly at: number;
}

const PREFIX = 'onceflow:v1';

export function formatCommitMetadata(m: CommitMetadata): string {
  return `${PREFIX};by=${m.by};at=${m.at}`;
}

/** Undefined for offsets committed by anything else (a plain consumer, a reset tool). */
export function parseCommitMetadata(raw: string | null | undefined): CommitMetadata | undefined {
  // librdkafka stores the string with its NUL terminator; other clients do not.
  const text = raw?.replace(/\u0000+$/, '');
  if (!text?.startsWith(`${PREFIX};`)) return undefined;
  const fields = new Map(text.slice(PREFIX.length + 1).split(';').map((kv) => kv.split('=', 2) as [string, string | undefined]));
  const by = fields.get('by');
  const at = Number(fields.get('at'));
  return by && Number.isFinite(at) ? { by, at } : undefined;
}
