/**
 * The demo's words, each explained in one plain line under the first line that uses it: a newcomer
 * reads the demo top to bottom and should never meet a term that nothing above has explained.
 */
const TERMS: readonly { readonly term: string; readonly pattern: RegExp; readonly meaning: string }[] = [
  { term: 'replica', pattern: /\breplicas?\b/, meaning: 'a worker process running the pipeline; the replicas of one app share its partitions as one consumer group' },
  { term: 'exactly_once', pattern: /\bexactly_once\b/, meaning: "a replica's outputs, its state changes and its input offsets are committed together in one Kafka transaction, or not at all" },
  { term: 'at_least_once', pattern: /\bat_least_once\b/, meaning: 'outputs are flushed first and the input offsets committed after; a crash in between makes the restart process those inputs again' },
  { term: 'dies at after-produce', pattern: /\bafter-produce\b/, meaning: 'the replica kills itself (kill -9) after its outputs reached Kafka and before its input offsets are committed: the gap that tells the two guarantees apart' },
  { term: 'SIGKILL', pattern: /\bSIGKILLs?\b/, meaning: 'kill -9: the process stops at once, with no chance to finish or commit anything' },
  { term: 'poison record', pattern: /\bpoison\b/, meaning: 'malformed bytes, not an order; each must land once in the dead-letter topic (DLQ) without blocking its partition' },
  { term: 'read_committed', pattern: /\bread_committed\b/, meaning: 'a consumer that sees only records of committed transactions and skips those of aborted ones, whose replica died before committing (read_uncommitted sees every record written)' },
  { term: 'caught up', pattern: /\bcatch up\b/, meaning: 'every input and intermediate record has been read and its offset committed by the replicas' },
  { term: 'the reader', pattern: /\breader during the run\b/, meaning: 'a read_committed consumer that followed the output topic live; it counts output records (updates of customer totals), not input events' },
  { term: 'end markers', pattern: /\bend markers?\b/, meaning: 'the commit or abort mark a transaction writes into each partition; read_committed readers cannot pass a transaction without one, so readable markers mean none was left open' },
  { term: 'duplicate', pattern: /\bduplicates?\b/, meaning: 'an output record that stands for the same input record as an earlier one (each output carries a lineage header naming its input)' },
  { term: 'repartition topics', pattern: /\brepartition topics?\b/, meaning: 'intermediate topics the pipeline writes between its steps to regroup records by another key (by order, then by customer)' },
  { term: 'lost', pattern: /\blost\b/, meaning: 'an input that should have led to an output, with no output tracing back to it' },
  { term: 'effect', pattern: /\beffects?\b/, meaning: 'a change outside Kafka (a database row, an HTTP call): no Kafka transaction can undo it, so a replay repeats it unless the target dedupes' },
];

export class TermExplainer {
  readonly #explained = new Set<string>();

  /** The line, then one `↳ term: meaning` line for each term the line is the first to use. */
  annotate(line: string, indent = '  '): string[] {
    const lines = [line];
    for (const { term, pattern, meaning } of TERMS) {
      if (this.#explained.has(term) || !pattern.test(line)) continue;
      this.#explained.add(term);
      lines.push(`${indent}↳ ${term}: ${meaning}`);
    }
    return lines;
  }
}
