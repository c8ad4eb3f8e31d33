import type { Message } from '@confluentinc/kafka-javascript';
import { partitionKey } from '../base/partition-progress.ts';

/**
 * What the synchronizer asks of the worker about an owned source partition.
 */
export interface SynchronizedInputs {
  /**
   * The input partitions of the task that reads `key`, when that task must take its inputs in
   * timestamp order (it reads several and keeps state); undefined for every other partition.
   */
  inputsOf(key: string): readonly string[] | undefined;
  /** The name of the task whose inputs `inputsOf` gave (Kafka Streams' `<sub-topology>_<partition>`). */
  taskOf(inputs: readonly string[]): string;
  /** Records on the broker (read_committed) the consumer has not delivered yet; undefined when not known. */
  lag(key: string): number | undefined;
  /** Changes whenever the partition's fetch position is put elsewhere (partition-progress.ts). */
  positionMoves(key: string): number;
  /** Stops and restarts fetching the partition (records keep arriving while its task waits for another input). */
  pause(key: string): void;
  resume(key: string): void;
}

/** Why a task went on although one of its inputs had nothing buffered. */
export interface EnforcedProcessing {
  readonly task: string;
  /** The input it stopped waiting for. */
  readonly partition: string;
  readonly waitedMs: number;
  /** 'lag': known to hold unread records; 'unknown': its end is not known yet; 'idle': caught up, and maxTaskIdleMs passed. */
  readonly reason: 'lag' | 'unknown' | 'idle';
}

interface Blocked {
  readonly partition: string;
  readonly reason: EnforcedProcessing['reason'];
}

interface Waiting {
  readonly since: number;
  readonly partition: string;
  /** It waited its limit and went on: it goes on until it no longer waits. */
  enforced: boolean;
}

interface Held {
  readonly messages: Message[];
  /** The first not yet released. */
  head: number;
  readonly positionMoves: number;
}

/**
 * How long a task waits for an input whose records are known to be on the broker (or whose end is not
 * known yet) before it goes on without them. Kafka Streams waits as long as it takes; a bound keeps
 * one partition the consumer cannot fetch from holding the others back for ever.
 */
export const LAG_WAIT_LIMIT_MS = 30_000;

/**
 * Records held per partition past which it is no longer fetched until half of them have gone (Kafka
 * Streams' buffered.records.per.partition, 1,000 there): memory stays bounded while a task waits.
 */
export const MAX_HELD_PER_PARTITION = 10_000;

/**
 * Timestamp synchronization of a task's inputs, as Kafka Streams' PartitionGroup does it (KIP-353,
 * KIP-695). A task that reads several partitions (a stream beside a table, two joined streams) must
 * see their records in timestamp order: on a backlog, librdkafka delivers one partition's records
 * long before another's, and a stream record joined before the older table row it needs finds none.
 * So the records of such tasks are held here, per partition in offset order, and released only as
 * far as every input allows: the input whose next record is the oldest goes first, and an input with
 * nothing held stops the task while it is known to have unread records (its lag), or for
 * `maxTaskIdleMs` once caught up. Tasks with one input, and stateless ones, pass straight through.
 *
 * The held records were delivered, so the consumer's position is past them; their offsets are only
 * committed once they are processed. Whenever a partition's position is put back (a rewind, an
 * assignment) its held records are dropped: they are fetched again from there.
 */
export class InputSynchronizer {
  private readonly held = new Map<string, Held>();
  private readonly paused = new Set<string>();
  /** Per task (its first input), since when it has waited and for which input. */
  private readonly waiting = new Map<string, Waiting>();

  constructor(
    private readonly inputs: SynchronizedInputs,
    /** config.maxTaskIdleMs: -1 never waits. */
    private readonly maxTaskIdleMs: number,
    private readonly onEnforced: (enforced: EnforcedProcessing) => void,
    /** A task's wait ended after `idleMs`. */
    private readonly onIdle: (idleMs: number) => void = () => undefined,
  ) {}

  /** Whether any record is held back (the loop runs the release even when a fetch brought nothing). */
  get holding(): boolean {
    for (const held of this.held.values()) if (held.head < held.messages.length) return true;
    return false;
  }

  /**
   * The records of `batch` to process now, and those held before that may go now. Must run before the
   * next consume call starts: the lag of an input is read from the consumer's position, which a fetch
   * in flight moves past records this has not seen yet.
   */
  admit(batch: readonly Message[], now = Date.now()): readonly Message[] {
    if (this.maxTaskIdleMs < 0) return batch;
    this.dropRepositioned();
    let out: Message[] | undefined;
    const touched = new Set<readonly string[]>();
    let runKey = '';
    let runTopic: string | undefined;
    let runPartition = -1;
    let runInputs: readonly string[] | undefined;
    for (let i = 0; i < batch.length; i++) {
      const message = batch[i]!;
      if (message.partition !== runPartition || message.topic !== runTopic) {
        runTopic = message.topic;
        runPartition = message.partition;
        runKey = partitionKey(runTopic, runPartition);
        runInputs = this.inputs.inputsOf(runKey);
      }
      if (runInputs === undefined) {
        out?.push(message);
        continue;
      }
      out ??= batch.slice(0, i);
      this.hold(runKey).messages.push(message);
      touched.add(runInputs);
    }
    for (const [key, held] of this.held) {
      // Every partition still held is synchronized: dropRepositioned let go of the others.
      const inputs = held.head < held.messages.length ? this.inputs.inputsOf(key) : undefined;
      if (inputs !== undefined) touched.add(inputs);
    }
    if (touched.size === 0) return out ?? batch;
    out ??= [...batch];
    for (const inputs of touched) this.release(inputs, out, now);
    this.compact();
    this.pauseOverfull();
    return out;
  }

  private hold(key: string): Held {
    let held = this.held.get(key);
    if (held === undefined) {
      held = { messages: [], head: 0, positionMoves: this.inputs.positionMoves(key) };
      this.held.set(key, held);
    }
    return held;
  }

  /** Held records of a partition whose position was put back, or that is no longer synchronized here, are read again. */
  private dropRepositioned(): void {
    for (const [key, held] of this.held) {
      if (held.positionMoves !== this.inputs.positionMoves(key) || this.inputs.inputsOf(key) === undefined) this.held.delete(key);
    }
    for (const key of this.paused) if (!this.held.has(key)) this.unpause(key);
  }

  private pauseOverfull(): void {
    for (const key of this.paused) if (this.heldCount(key) <= MAX_HELD_PER_PARTITION / 2) this.unpause(key);
    for (const key of this.held.keys()) {
      if (this.heldCount(key) > MAX_HELD_PER_PARTITION && !this.paused.has(key)) {
        this.paused.add(key);
        this.inputs.pause(key);
      }
    }
  }

  private unpause(key: string): void {
    this.paused.delete(key);
    this.inputs.resume(key);
  }

  /** Moves the task's records that may go now into `out`, oldest first across its inputs. */
  private release(inputs: readonly string[], out: Message[], now: number): void {
    const task = this.inputs.taskOf(inputs);
    for (;;) {
      let oldest: Held | undefined;
      let oldestTs = Number.POSITIVE_INFINITY;
      let secondTs = Number.POSITIVE_INFINITY;
      let blocked: Blocked | undefined;
      for (const key of inputs) {
        const held = this.held.get(key);
        if (held === undefined || held.head >= held.messages.length) {
          // An input with nothing held that may be passed counts as infinitely far ahead.
          blocked ??= this.blockedBy(key);
          continue;
        }
        const ts = held.messages[held.head]!.timestamp ?? 0;
        if (oldest === undefined || ts < oldestTs) {
          secondTs = oldestTs;
          oldest = held;
          oldestTs = ts;
        } else if (ts < secondTs) secondTs = ts;
      }
      if (oldest === undefined) return;
      if (blocked === undefined) this.stopWaiting(task, now);
      else if (!this.waitedEnough(task, blocked, now)) return;
      const messages = oldest.messages;
      let to = oldest.head + 1;
      while (to < messages.length && (messages[to]!.timestamp ?? 0) <= secondTs) to++;
      for (let i = oldest.head; i < to; i++) out.push(messages[i]!);
      oldest.head = to;
    }
  }

  /** Whether an input with nothing held must be waited for, and why; undefined when the task may pass it. */
  private blockedBy(key: string): Blocked | undefined {
    const lag = this.inputs.lag(key);
    if (lag === undefined) return { partition: key, reason: 'unknown' };
    if (lag > 0) return { partition: key, reason: 'lag' };
    return this.maxTaskIdleMs > 0 ? { partition: key, reason: 'idle' } : undefined;
  }

  /**
   * True once the task has waited long enough for `blocked`, and from then on until it no longer
   * waits (Kafka Streams' enforced processing); said once per wait.
   */
  private waitedEnough(task: string, blocked: Blocked, now: number): boolean {
    let waiting = this.waiting.get(task);
    if (waiting === undefined || waiting.partition !== blocked.partition) {
      waiting = { since: waiting?.since ?? now, partition: blocked.partition, enforced: false };
      this.waiting.set(task, waiting);
    }
    if (waiting.enforced) return true;
    const limit = blocked.reason === 'idle' ? this.maxTaskIdleMs : Math.max(this.maxTaskIdleMs, LAG_WAIT_LIMIT_MS);
    const waitedMs = now - waiting.since;
    if (waitedMs < limit) return false;
    waiting.enforced = true;
    this.onEnforced({ task, partition: blocked.partition, waitedMs, reason: blocked.reason });
    return true;
  }

  private stopWaiting(task: string, now: number): void {
    const waiting = this.waiting.get(task);
    if (waiting === undefined) return;
    this.waiting.delete(task);
    this.onIdle(now - waiting.since);
  }

  /** Tasks waiting now, with the input each waits for and since when. */
  waitingTasks(now = Date.now()): { readonly task: string; readonly partition: string; readonly forMs: number }[] {
    return [...this.waiting].filter(([, w]) => !w.enforced).map(([task, w]) => ({ task, partition: w.partition, forMs: now - w.since }));
  }

  /** Held records per partition, for pausing a partition whose records pile up. */
  heldCount(key: string): number {
    const held = this.held.get(key);
    return held === undefined ? 0 : held.messages.length - held.head;
  }

  private compact(): void {
    for (const [key, held] of this.held) {
      if (held.head >= held.messages.length) this.held.delete(key);
      else if (held.head > 4096) {
        held.messages.splice(0, held.head);
        held.head = 0;
      }
    }
  }
}
