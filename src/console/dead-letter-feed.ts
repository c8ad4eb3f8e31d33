import { entryOf } from '../dlq/dead-letters.ts';
import type { ClientOptions } from '../kafka/admin.ts';
import { followTopic } from '../kafka/read-topic.ts';

export interface RecentDeadLetter {
  readonly code: string;
  readonly stage: string;
  /** `<topic>/<partition>/<offset>` of the record that failed. */
  readonly source: string;
  /** When it was dead-lettered, ms. */
  readonly at: number;
  readonly message: string;
}

export interface DeadLetterSummary {
  readonly topic: string;
  /** False until a worker created the topic: nothing was ever dead-lettered, or no worker has started. */
  readonly following: boolean;
  readonly total: number;
  /** Dead-lettered in the last minute, by their own timestamps. */
  readonly lastMinute: number;
  /** Newest first. */
  readonly latest: readonly RecentDeadLetter[];
}

const KEEP = 5;

/**
 * Reads the dead-letter topic from its start and then as records arrive (read_committed: a dead letter
 * of an aborted transaction was never a dead letter), keeping a count and the newest few. Dead letters
 * are written in transactions, so the topic's offsets count commit markers too and cannot be the total.
 */
export class DeadLetterFeed {
  #total = 0;
  #times: number[] = [];
  #latest: RecentDeadLetter[] = [];
  #following: Promise<void> | undefined;
  #error: string | undefined;
  readonly #stop = new AbortController();

  constructor(
    private readonly bootstrap: string,
    readonly topic: string,
    private readonly clientOptions: ClientOptions = {},
  ) {}

  /** Once the topic exists; a second call does nothing. */
  follow(): void {
    this.#following ??= this.#read().catch((e: unknown) => {
      this.#error = `reading ${this.topic} failed: ${e instanceof Error ? e.message : String(e)}`;
      this.#following = undefined;
    });
  }

  get following(): boolean {
    return this.#following !== undefined;
  }

  /** The last read failure, once; the caller reports it and calls follow() again on its next refresh. */
  takeError(): string | undefined {
    const e = this.#error;
    this.#error = undefined;
    return e;
  }

  async #read(): Promise<void> {
    // A restart re-reads from the start: the counts are rebuilt, not added to.
    this.#total = 0;
    this.#times = [];
    this.#latest = [];
    for await (const record of followTopic(this.bootstrap, this.topic, { fromBeginning: true, isolation: 'read_committed', clientOptions: this.clientOptions, signal: this.#stop.signal })) {
      const e = entryOf(record);
      const at = Date.parse(e.time);
      this.#total++;
      this.#times.push(Number.isFinite(at) ? at : record.timestamp);
      this.#latest = [{ code: e.code, stage: e.stage, source: `${e.sourceTopic}/${e.sourcePartition}/${e.sourceOffset}`, at: Number.isFinite(at) ? at : record.timestamp, message: e.message }, ...this.#latest].slice(0, KEEP);
    }
  }

  summary(now: number): DeadLetterSummary {
    this.#times = this.#times.filter((t) => t > now - 60_000);
    return { topic: this.topic, following: this.following, total: this.#total, lastMinute: this.#times.length, latest: this.#latest };
  }

  async close(): Promise<void> {
    this.#stop.abort();
    await this.#following;
  }
}
