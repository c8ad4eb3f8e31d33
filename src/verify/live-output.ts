import type { IncomingRecord } from '../core/records.ts';
import type { ClientOptions } from '../kafka/admin.ts';
import { beginTransaction, commitTransaction, connectProducer, disconnect, initTransactions } from '../kafka/clients.ts';
import { followTopic, partitionsOf } from '../kafka/read-topic.ts';
import { lineageOf, recordId } from './verify.ts';

/** The output topic exists: a node restarted by the harness may not show it for a few seconds. */
const RESTARTED_BROKER_GRACE_MS = 30_000;

/**
 * What a downstream read_committed consumer sees while the chaos runs, not only what the topic ends with: the
 * end state can be right while a reader was shown something on the way (a record of a transaction that later
 * aborted, one record twice, records in another order than the log keeps them).
 */
export interface LiveOutputReport {
  /** Records the reader was given during the run. */
  readonly records: number;
  /** One lineage (source record and output number) given twice. */
  readonly duplicates: number;
  /**
   * Per partition: an offset not after the one before it, or a record's outputs given in another order than
   * their numbers (a record's outputs to one partition are written in one transaction, in that order).
   */
  readonly outOfOrder: number;
  /** Given to the reader, but not in the topic's committed records at the end: it belonged to an aborted transaction. */
  readonly aborted: number;
  /** Committed records before the reader's last position in their partition that it was never given. */
  readonly skipped: number;
  /** Committed records after the reader's last position in their partition, when it stopped: how far behind it was (not a fault). */
  readonly notReached: number;
  readonly examples: readonly string[];
}

const EXAMPLES = 5;

export class LiveOutputReader {
  private readonly seen: IncomingRecord[] = [];
  private readonly abort = new AbortController();
  private readonly done: Promise<void>;
  private failure: unknown;

  private constructor(bootstrap: string, topic: string, clientOptions: ClientOptions) {
    this.done = (async () => {
      for await (const record of followTopic(bootstrap, topic, { fromBeginning: true, isolation: 'read_committed', signal: this.abort.signal, clientOptions, missingTopicGraceMs: RESTARTED_BROKER_GRACE_MS })) {
        this.seen.push(record);
      }
    })().catch((e: unknown) => {
      this.failure = e;
    });
  }

  static start(bootstrap: string, topic: string, clientOptions: ClientOptions = {}): LiveOutputReader {
    return new LiveOutputReader(bootstrap, topic, clientOptions);
  }

  get count(): number {
    return this.seen.length;
  }

  async stop(): Promise<void> {
    this.abort.abort();
    await this.done;
    if (this.failure !== undefined) throw this.failure;
  }

  /** Compares what was given live with the topic's committed records read afterwards. */
  compare(committed: readonly IncomingRecord[]): LiveOutputReport {
    return compareLiveOutput(this.seen, committed);
  }
}

/** What a reader was given (`seen`, in the order given) against the committed records read afterwards. */
export function compareLiveOutput(seen: readonly IncomingRecord[], committed: readonly IncomingRecord[]): LiveOutputReport {
    const examples: string[] = [];
    const note = (text: string) => void (examples.length < EXAMPLES && examples.push(text));
    const final = new Map(committed.map((r) => [recordId(r), r]));
    const lineages = new Set<string>();
    const lastOffset = new Map<number, number>();
    // Per partition and parent lineage: the highest output number given so far.
    const lastChild = new Map<string, number>();
    let duplicates = 0;
    let outOfOrder = 0;
    let aborted = 0;
    for (const r of seen) {
      const before = lastOffset.get(r.partition);
      if (before !== undefined && r.offset <= before) {
        outOfOrder++;
        note(`partition ${r.partition}: offset ${r.offset} given after ${before}`);
      }
      lastOffset.set(r.partition, Math.max(before ?? -1, r.offset));
      if (!final.has(recordId(r))) {
        aborted++;
        note(`${recordId(r)} was given to the read_committed reader but is not committed`);
      }
      const lineage = lineageOf(r);
      if (!lineage) continue;
      const id = `${lineage.source}#${lineage.seq}`;
      if (lineages.has(id)) {
        duplicates++;
        note(`${id} given again at ${recordId(r)}`);
      }
      lineages.add(id);
      const dot = lineage.seq.lastIndexOf('.');
      const number = lineage.seq.slice(dot + 1);
      if (!/^\d+$/.test(number)) continue;
      const parent = `${r.partition}|${lineage.source}#${lineage.seq.slice(0, Math.max(0, dot))}`;
      const previous = lastChild.get(parent);
      if (previous !== undefined && Number(number) < previous) {
        outOfOrder++;
        note(`${id} given after its sibling number ${previous} in partition ${r.partition}`);
      }
      lastChild.set(parent, Math.max(previous ?? -1, Number(number)));
    }
    const given = new Set(seen.map(recordId));
    let skipped = 0;
    let notReached = 0;
    for (const r of committed) {
      const reached = lastOffset.get(r.partition);
      if (reached === undefined || r.offset > reached) notReached++;
      else if (r.offset < reached && !given.has(recordId(r))) {
        skipped++;
        note(`${recordId(r)} is committed but the reader went past it`);
      }
    }
    return { records: seen.length, duplicates, outOfOrder, aborted, skipped, notReached, examples };
}

/**
 * Writes one marker record to every partition of a topic in a transaction of a fresh producer, then reads the
 * topic read_committed until every marker is in. A transaction some killed producer left open holds back
 * everything after it from such a reader: then the markers do not show (until its timeout aborts it).
 * Returns the milliseconds from the commit until the last marker was read, or undefined after `timeoutMs`.
 */
export async function endMarkerVisibleMs(bootstrap: string, topic: string, opts: { timeoutMs?: number; clientOptions?: ClientOptions } = {}): Promise<number | undefined> {
  const clientOptions = opts.clientOptions ?? {};
  const partitions = await partitionsOf(bootstrap, topic, clientOptions, RESTARTED_BROKER_GRACE_MS);
  const marker = `onceflow-end-marker-${Date.now().toString(36)}-${Math.random().toString(36).slice(2)}`;
  const producer = await connectProducer({ 'bootstrap.servers': bootstrap, 'transactional.id': marker, ...clientOptions });
  try {
    await initTransactions(producer, 30_000);
    await beginTransaction(producer);
    for (let p = 0; p < partitions; p++) producer.produce(topic, p, Buffer.from(marker), Buffer.from(marker), Date.now());
    await commitTransaction(producer, 30_000);
  } finally {
    await disconnect(producer);
  }
  const committedAt = Date.now();
  const timeoutMs = opts.timeoutMs ?? 60_000;
  const abort = new AbortController();
  const timer = setTimeout(() => abort.abort(), timeoutMs);
  const found = new Set<number>();
  try {
    for await (const r of followTopic(bootstrap, topic, { fromBeginning: true, isolation: 'read_committed', signal: abort.signal, clientOptions, missingTopicGraceMs: RESTARTED_BROKER_GRACE_MS })) {
      if (r.value?.toString() !== marker) continue;
      found.add(r.partition);
      if (found.size === partitions) return Date.now() - committedAt;
    }
  } finally {
    clearTimeout(timer);
    abort.abort();
  }
  return undefined;
}
