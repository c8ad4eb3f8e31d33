/**
 * `npm run marathon`: the production-faults marathon, one command. The same seeded schedule runs twice on its
 * own three-broker cluster (replication 3, min ISR 2, a fault proxy in front of each node): first exactly once,
 * then at least once, to show what the weaker guarantee duplicates under the same faults. The result of both
 * goes to docs/marathon.json (or --json). Exit code 1 when the exactly-once run is not clean.
 *
 * Defaults are the issue's bar: 1,000,000 input records, up to 3 replicas, 100 SIGKILLs (every other one inside a
 * transaction phase), 5 broker kill -9s, 10 connection stalls, scaling 1 → 3 → 1 (a replica added at 30 %, one
 * removed at 70 % of the feed), 100 poison records. Smaller runs for a try: --records 20000 --feed-ms 60000 ...
 */
import { execFileSync } from 'node:child_process';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import { projectRoot } from '../src/kafka/paths.ts';
import type { ChaosOptions } from '../src/verify/chaos/options.ts';
import type { ChaosResult } from '../src/verify/chaos/result.ts';
import { runChaos } from '../src/verify/chaos/run-chaos.ts';

const { values } = parseArgs({
  options: {
    records: { type: 'string', default: '1000000' },
    kills: { type: 'string', default: '100' },
    'broker-kills': { type: 'string', default: '5' },
    stalls: { type: 'string', default: '10' },
    poison: { type: 'string', default: '100' },
    'feed-ms': { type: 'string', default: '600000' },
    seed: { type: 'string', default: '1000' },
    only: { type: 'string' },
    json: { type: 'string', default: join(projectRoot(), 'docs', 'marathon.json') },
  },
});

function count(name: keyof typeof values): number {
  const n = Number(values[name]);
  if (!Number.isInteger(n) || n < 0) {
    console.error(`marathon: --${name} must be a whole number ≥ 0, got ${String(values[name])}`);
    process.exit(2);
  }
  return n;
}

const schedule = {
  records: count('records'),
  // 1 → 3 → 1: two replicas join at 30 % of the feed and two leave at 70 %.
  replicas: 1,
  scale: 2,
  kills: count('kills'),
  brokers: 3,
  brokerKills: count('broker-kills'),
  stalls: count('stalls'),
  poison: count('poison'),
  feedMs: count('feed-ms'),
  seed: count('seed'),
  pipeline: 'orders',
} satisfies Partial<ChaosOptions>;

const guarantees = (['exactly_once', 'at_least_once'] as const).filter((g) => values.only === undefined || values.only === g);
if (guarantees.length === 0) {
  console.error(`marathon: --only takes exactly_once or at_least_once, got ${values.only}`);
  process.exit(2);
}

const started = Date.now();
// Which code ran: the marathon's figures belong to a commit.
const commit = execFileSync('git', ['rev-parse', '--short', 'HEAD'], { cwd: projectRoot(), encoding: 'utf8' }).trim();
const runs: Record<string, unknown> = {};
let eosClean = true;
for (const guarantee of guarantees) {
  const t0 = Date.now();
  const log = (line: string) => console.error(`marathon ${guarantee} +${Math.round((Date.now() - t0) / 1000)}s: ${line}`);
  const result: ChaosResult = await runChaos({ ...schedule, guarantee, log });
  const { verify: report, ...summary } = result;
  runs[guarantee] = { ...summary, examples: report.examples };
  console.error(`marathon ${guarantee}: ${result.duplicates} duplicates, ${result.lost} lost, ${result.aggregateMismatches} aggregate mismatches, ${result.dlqRecords} dead letters of ${result.poisonInjected} poison, end markers ${result.endMarkerMs === null ? 'NOT readable' : `readable after ${result.endMarkerMs} ms`}, ${Math.round(result.durationMs / 1000)} s`);
  if (guarantee === 'exactly_once') eosClean = result.ok;
  // Written after each run: a later run that fails still leaves the earlier one on disk.
  writeFileSync(values.json!, `${JSON.stringify({ command: `npm run marathon -- ${process.argv.slice(2).join(' ')}`.trim(), startedAt: new Date(started).toISOString(), commit, schedule, runs }, null, 2)}\n`);
}
console.log(`marathon: results in ${values.json}`);
if (!eosClean) process.exitCode = 1;
