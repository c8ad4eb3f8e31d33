import type { NamedOptions, SerdeFor } from './types.ts';

/** A processor's own store: key-value, changelogged, written in the transaction like every store. */
export interface ProcessorStore<SK, S> {
  get(key: SK): S | undefined;
  put(key: SK, value: S): void;
  delete(key: SK): void;
  /** Every entry, the open transaction's writes included. */
  entries(): Array<[SK, S]>;
}

/** What a processor's function and its punctuations see. */
export interface ProcessorContext<KO, VO, SK, S> {
  /** Sends a record downstream; it leaves with the input record (or punctuation) when that succeeds. */
  forward(key: KO, value: VO): void;
  readonly store: ProcessorStore<SK, S>;
  /** The task's stream time: the largest event time it has seen. */
  readonly streamTime: number;
  /** Event time of the record being processed, or the time of the punctuation. */
  readonly timestamp: number;
  /** The partition of the task running the stage (its input partition). */
  readonly partition: number;
}

/**
 * Work a processor schedules: every `everyMs` of stream time (deterministic: it runs again the same way
 * when records are replayed after a crash) or of wall-clock time (runs even when no record arrives).
 * It runs inside the open transaction: its outputs and store writes commit or abort with it.
 */
export interface Punctuation<KO, VO, SK, S> {
  readonly on: 'stream-time' | 'wall-clock';
  readonly everyMs: number;
  /** `time`: the boundary (a multiple of everyMs) that was crossed. */
  run(time: number, ctx: ProcessorContext<KO, VO, SK, S>): void;
}

export interface ProcessorOptions<K, V, KO, VO, SK, S> extends NamedOptions {
  /** Called for each record; omitted: records only feed the punctuations' view of stream time. */
  readonly process?: (key: K, value: V, ctx: ProcessorContext<KO, VO, SK, S>) => void;
  readonly punctuate?: readonly Punctuation<KO, VO, SK, S>[];
  /** The processor's store; without it `ctx.store` throws. */
  readonly state?: { readonly key: SerdeFor<SK>; readonly value: SerdeFor<S>; readonly store?: string };
  /** Serdes of what it forwards, for a sink or a stateful stage after it. */
  readonly key?: SerdeFor<KO>;
  readonly value?: SerdeFor<VO>;
}

export type ProcessFn = (key: unknown, value: unknown, ctx: ProcessorContext<unknown, unknown, unknown, unknown>) => void;

export interface PunctuationSpec {
  readonly on: 'stream-time' | 'wall-clock';
  readonly everyMs: number;
  readonly run: (time: number, ctx: ProcessorContext<unknown, unknown, unknown, unknown>) => void;
}
