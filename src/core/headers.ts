// The header names onceflow writes: a contract with readers outside the runtime (the verifier, the
// dead-letter tools, the test driver), so each name is spelled once, here.
import type { RecordOrigin } from './records.ts';

/**
 * Stamped on every record the worker produces: the source record it stands for and its place among
 * that record's outputs, as one header `onceflow.lineage: <topic>/<partition>/<offset>#<seq>[.<seq>...]`.
 * The source is the record read from a user's topic; each hop through a repartition topic carries the
 * header forward and appends the number of the output at that hop, so an output's lineage is unique
 * however many repartitions lie between it and its source. One header, not one per field: each header
 * costs the Kafka client a conversion per produced record.
 */
export const LINEAGE = { header: 'onceflow.lineage' } as const;

/** A lineage header's value, split: `source` is `<topic>/<partition>/<offset>`, `seq` the hop numbers joined by dots. */
export interface Lineage {
  readonly source: string;
  readonly seq: string;
}

export function parseLineage(value: string): Lineage | undefined {
  const hash = value.lastIndexOf('#');
  if (hash <= 0) return undefined;
  return { source: value.slice(0, hash), seq: value.slice(hash + 1) };
}

/** What every output of `record` carries before its own number: a source record starts the chain, a repartitioned one extends it. */
export function lineagePrefix(record: { readonly topic: string; readonly partition: number; readonly offset: number; readonly lineage?: string | undefined }): string {
  return record.lineage !== undefined ? `${record.lineage}.` : `${record.topic}/${record.partition}/${record.offset}#`;
}

/**
 * The lineage of the next output sent for `origin`, which it numbers on: released results ('c0', 'c1',
 * ...) apart from what the record's own processing sent. Wherever a task runs (the main thread or a
 * processing thread), its outputs are numbered here, so a replay numbers them the same.
 */
export function nextLineage(origin: RecordOrigin): string {
  const seq = origin.released ? `c${origin.seq++}` : String(origin.seq++);
  return (origin.lineagePrefix ??= lineagePrefix(origin.record)) + seq;
}

/** Stamped on a dead letter: why it failed, and where its record was read. */
export const DEAD_LETTER = {
  code: 'onceflow.error.code',
  message: 'onceflow.error.message',
  stack: 'onceflow.error.stack',
  attempts: 'onceflow.error.attempts',
  stage: 'onceflow.error.stage',
  time: 'onceflow.error.time',
  /** On a dead letter that carries only the first bytes of its input: `key`, `value` or `key,value`, what was cut. */
  excerpt: 'onceflow.error.excerpt',
  /** With `excerpt`: the full sizes of the input's key and value. */
  keyBytes: 'onceflow.source.key-bytes',
  valueBytes: 'onceflow.source.value-bytes',
  sourceTopic: 'onceflow.source.topic',
  sourcePartition: 'onceflow.source.partition',
  sourceOffset: 'onceflow.source.offset',
} as const;

/**
 * Stamped by `dlq replay` on a republished record: the source `<topic>/<partition>/<offset>` of its first
 * failure. A replayed record that fails again is dead-lettered with it (the worker keeps a record's own
 * headers), so the dead-letter tools show one dead letter per original record, its attempts growing.
 */
export const REPLAY = { origin: 'onceflow.replay.origin' } as const;
