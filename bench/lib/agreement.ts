import type { BenchPipeline, ContenderName } from './contenders.ts';
import { factsOf } from './contenders.ts';
import { PROBE_PREFIX } from './models.ts';
import type { BenchResults, RunResult } from './report.ts';

/** Last value per key of an aggregate run's output, by `pipeline/contender/round`. */
export type Finals = ReadonlyMap<string, ReadonlyMap<string, string>>;

export const finalsKey = (pipeline: BenchPipeline, contender: ContenderName, round: number): string => `${pipeline}/${contender}/${round}`;

/**
 * Every other contender's final aggregates against onceflow exactly_once's (default threads), round by
 * round: the runs of one round read the same input offsets, so their final values must be equal
 * (probe keys left out). filter-map has no aggregate: its output counts are listed instead.
 */
export function compareFinals(results: readonly RunResult[], finals: Finals, pipelines: readonly BenchPipeline[], rounds: number, contenders: readonly ContenderName[]): BenchResults['kafkaStreamsAgreement'] {
  const agreement: BenchResults['kafkaStreamsAgreement'] = {};
  for (const pipeline of pipelines) {
    if (pipeline === 'filter-map') {
      const counts = results
        .filter((r) => r.pipeline === pipeline && !r.sweep && (factsOf(r.contender).kind === 'kafka-streams' || r.contender === 'onceflow-eos'))
        .map((r) => `${r.contender} r${r.round}: ${r.backlogOutputRecords} outputs`);
      agreement[pipeline] = { compared: counts.length > 0, equal: undefined, detail: counts.join('; ') };
      continue;
    }
    const detail: string[] = [];
    let equal: boolean | undefined;
    for (let round = 1; round <= rounds; round++) {
      const ours = finals.get(finalsKey(pipeline, 'onceflow-eos', round));
      if (!ours) continue;
      for (const other of contenders.filter((c) => c !== 'onceflow-eos')) {
        const theirs = finals.get(finalsKey(pipeline, other, round));
        if (!theirs) continue;
        const keys = new Set([...theirs.keys(), ...ours.keys()].filter((k) => !k.startsWith(PROBE_PREFIX)));
        const diff = [...keys].filter((k) => theirs.get(k) !== ours.get(k));
        equal = (equal ?? true) && diff.length === 0;
        const examples = diff.slice(0, 3).map((k) => `${k}: ${other}=${theirs.get(k)} onceflow-eos=${ours.get(k)}`);
        detail.push(`${other} round ${round}: ${keys.size} keys, ${diff.length} differ${diff.length ? ` (e.g. ${examples.join(', ')})` : ''}`);
      }
    }
    agreement[pipeline] = { compared: equal !== undefined, equal, detail: detail.join('; ') };
  }
  return agreement;
}
