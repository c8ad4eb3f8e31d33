/**
 * The one definition of lag, shared by `onceflow status`, the console and the worker's metric: the
 * records a read_committed reader has still to read on a partition, from the next offset to read up
 * to the partition's end (its last stable offset).
 *
 * Offsets that hold no readable record do not count where they lead up to the reader's position:
 * a transactional writer (a worker's repartition topic, `onceflow produce`) follows its records
 * with a commit marker no consumer ever returns, so a caught-up reader's committed offset stays one
 * short of the end for ever. Hence `firstReadable`: the offset of the first record at or after
 * `next` that a read_committed reader returns, `null` when there is none before `end` (only
 * markers or aborted records are left: caught up), `undefined` when nobody looked (every offset counts).
 * Markers between two unread records still count: while records wait, the figure is an upper bound.
 */
export function recordsBehind(next: number, end: number, firstReadable?: number | null): number {
  if (firstReadable === null) return 0;
  const from = firstReadable === undefined ? next : Math.max(next, firstReadable);
  return Math.max(0, end - from);
}
