import { OnceflowError } from '../errors.ts';
import { ensureTopics, withAdmin } from '../kafka/admin.ts';
import { connectProducer, disconnect, flush, type RdConfig } from '../kafka/clients.ts';
import { readTopic } from '../kafka/read-topic.ts';
import type { IncomingRecord, RecordHeader } from '../core/records.ts';
import { DEAD_LETTER, REPLAY } from '../core/headers.ts';

export class DeadLetterToolError extends OnceflowError {
  constructor(
    readonly code: 'DLQ_TOPIC_MISSING' | 'DLQ_FILTER_INVALID',
    message: string,
  ) {
    super(message);
  }
}

/** A dead-lettered record as the task engine wrote it: the original record plus why it failed. */
export interface DeadLetterEntry {
  /** `<dlq partition>/<dlq offset>`: what the replay log remembers. */
  readonly id: string;
  readonly sourceTopic: string;
  readonly sourcePartition: number;
  readonly sourceOffset: number;
  readonly stage: string;
  readonly code: string;
  readonly message: string;
  /** Attempts over every failure of the original record (a replay that failed again adds its own). */
  readonly attempts: number;
  /** How many times the original record was dead-lettered: 1, plus one per replay that failed again. */
  readonly failures: number;
  /** Source `<topic>/<partition>/<offset>` of the first failure: the same for every replay of the record. */
  readonly origin: string;
  /** When it was (last) dead-lettered, ISO 8601. */
  readonly time: string;
  readonly key: Buffer | null;
  readonly value: Buffer | null;
  /** The original record's own headers, without onceflow's error and lineage headers. */
  readonly headers: readonly RecordHeader[];
  /** Set when key and value are only the first bytes of the original's (a record over a size limit): their full sizes. Not replayable. */
  readonly excerpt?: { readonly keyBytes: number; readonly valueBytes: number };
}

const OWN_HEADER = /^onceflow\.(lineage$|(error|source|src|txn|replay)\.)/;

/** The entry a dead-letter topic record stands for; the console reads them one by one as they arrive. */
export function entryOf(r: IncomingRecord): DeadLetterEntry {
  const h = (k: string) => r.headers.find((x) => x.key === k)?.value.toString() ?? '';
  const epochMs = Number(h(DEAD_LETTER.time));
  return {
    id: `${r.partition}/${r.offset}`,
    sourceTopic: h(DEAD_LETTER.sourceTopic),
    sourcePartition: Number(h(DEAD_LETTER.sourcePartition)),
    sourceOffset: Number(h(DEAD_LETTER.sourceOffset)),
    stage: h(DEAD_LETTER.stage),
    code: h(DEAD_LETTER.code),
    message: h(DEAD_LETTER.message),
    attempts: Number(h(DEAD_LETTER.attempts) || '1'),
    failures: 1,
    origin: h(REPLAY.origin) || `${h(DEAD_LETTER.sourceTopic)}/${h(DEAD_LETTER.sourcePartition)}/${h(DEAD_LETTER.sourceOffset)}`,
    time: Number.isFinite(epochMs) && epochMs > 0 ? new Date(epochMs).toISOString() : h(DEAD_LETTER.time),
    key: r.key,
    value: r.value,
    headers: r.headers.filter((x) => !OWN_HEADER.test(x.key)),
    ...(h(DEAD_LETTER.excerpt) === '' ? {} : { excerpt: { keyBytes: Number(h(DEAD_LETTER.keyBytes)), valueBytes: Number(h(DEAD_LETTER.valueBytes)) } }),
  };
}

export type DeadLetterFilter = (e: DeadLetterEntry) => boolean;

/** `code=JSON_INVALID`, `stage=order-versions`, `topic=orders`; several are ANDed. */
export function parseWhere(clauses: readonly string[]): DeadLetterFilter {
  const fields = { code: (e: DeadLetterEntry) => e.code, stage: (e: DeadLetterEntry) => e.stage, topic: (e: DeadLetterEntry) => e.sourceTopic } as const;
  const tests = clauses.map((clause) => {
    const at = clause.indexOf('=');
    const field = clause.slice(0, at) as keyof typeof fields;
    if (at <= 0 || !(field in fields)) {
      throw new DeadLetterToolError('DLQ_FILTER_INVALID', `--where ${JSON.stringify(clause)}: expected code=..., stage=... or topic=...`);
    }
    const want = clause.slice(at + 1);
    return (e: DeadLetterEntry) => fields[field](e) === want;
  });
  return (e) => tests.every((t) => t(e));
}

export const replayLogTopic = (dlqTopic: string): string => `${dlqTopic}-replayed`;

async function assertTopic(bootstrap: string, topic: string, clientOptions: RdConfig): Promise<void> {
  const topics = await withAdmin(bootstrap, (a) => a.listTopics(), clientOptions as Record<string, string>);
  if (!topics.includes(topic)) throw new DeadLetterToolError('DLQ_TOPIC_MISSING', `dead-letter topic ${topic} does not exist (wrong --app-id, or nothing was dead-lettered yet)`);
}

export async function listDeadLetters(bootstrap: string, dlqTopic: string, filter: DeadLetterFilter = () => true, clientOptions: RdConfig = {}): Promise<DeadLetterEntry[]> {
  await assertTopic(bootstrap, dlqTopic, clientOptions);
  const records = await readTopic(bootstrap, dlqTopic, { isolation: 'read_committed', clientOptions: clientOptions as Record<string, string> });
  return latestPerOrigin(records.sort((a, b) => a.partition - b.partition || a.offset - b.offset).map(entryOf)).filter(filter);
}

/** One entry per original record: its latest dead letter, with the attempts and failures of all of them. */
function latestPerOrigin(entries: readonly DeadLetterEntry[]): DeadLetterEntry[] {
  const byOrigin = new Map<string, DeadLetterEntry>();
  for (const e of [...entries].sort((a, b) => a.time.localeCompare(b.time))) {
    const before = byOrigin.get(e.origin);
    byOrigin.set(e.origin, before ? { ...e, attempts: before.attempts + e.attempts, failures: before.failures + 1 } : e);
  }
  return [...byOrigin.values()];
}

export interface ReplayResult {
  readonly replayed: DeadLetterEntry[];
  /** Replayed before (the replay log lists them). */
  readonly skipped: DeadLetterEntry[];
  /** Excerpts of records over a size limit: republished, the excerpt would pass for the record. Read them again from their source coordinates. */
  readonly excerpts: DeadLetterEntry[];
}

/**
 * Re-publishes dead letters with their original key, value and headers (event ids included, so
 * dedupe stages recognise them), then records each replayed id in a compacted log topic, only after
 * the broker acknowledged the record: a second replay skips what the first one published. A crash
 * between the two replays that record again (at-least-once, by design: downstream dedupe absorbs it).
 */
export async function replayDeadLetters(opts: { bootstrap: string; dlqTopic: string; filter?: DeadLetterFilter; to?: string; clientOptions?: RdConfig; dryRun?: boolean }): Promise<ReplayResult> {
  const clientOptions = opts.clientOptions ?? {};
  const entries = await listDeadLetters(opts.bootstrap, opts.dlqTopic, opts.filter, clientOptions);
  const logTopic = replayLogTopic(opts.dlqTopic);
  // A dry run writes nothing, not even the log topic: a log not there yet means nothing was replayed.
  const logExists = opts.dryRun ? (await withAdmin(opts.bootstrap, (a) => a.listTopics(), clientOptions as Record<string, string>)).includes(logTopic) : true;
  if (!opts.dryRun) await withAdmin(opts.bootstrap, (a) => ensureTopics(a, [{ name: logTopic, partitions: 1, compact: true }]), clientOptions as Record<string, string>);
  const done = new Set(logExists ? (await readTopic(opts.bootstrap, logTopic, { clientOptions: clientOptions as Record<string, string> })).map((r) => r.key?.toString()) : []);
  const excerpts = entries.filter((e) => e.excerpt !== undefined);
  const todo = entries.filter((e) => !done.has(e.id) && e.excerpt === undefined);
  const skipped = entries.filter((e) => done.has(e.id) && e.excerpt === undefined);
  if (todo.length === 0 || opts.dryRun) return { replayed: todo, skipped, excerpts };
  const producer = await connectProducer({ 'bootstrap.servers': opts.bootstrap, 'enable.idempotence': true, ...clientOptions });
  try {
    for (const e of todo) {
      producer.produce(opts.to ?? e.sourceTopic, null, e.value, e.key, Date.now(), undefined, [...e.headers.map((h) => ({ [h.key]: h.value })), { [REPLAY.origin]: e.origin }]);
    }
    await flush(producer, 60_000);
    for (const e of todo) producer.produce(logTopic, 0, Buffer.from(JSON.stringify({ to: opts.to ?? e.sourceTopic, at: new Date().toISOString() })), e.id);
    await flush(producer, 60_000);
  } finally {
    await disconnect(producer);
  }
  return { replayed: todo, skipped, excerpts };
}
