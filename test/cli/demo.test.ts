import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, test } from 'node:test';
import type { DemoReport } from '../../src/cli/demo.ts';
import { projectRoot } from '../../src/kafka/paths.ts';
import { PG_URL } from '../effects/pg.ts';
import { testCluster } from '../support/cluster.ts';

const dir = mkdtempSync(join(tmpdir(), 'onceflow-demo-'));
after(() => rmSync(dir, { recursive: true, force: true }));

// `npm run demo` as the README's first command runs it, on the suite's broker instead of one of its own.
test('demo: under the same kills between output flush and offset commit, at_least_once shows duplicates and exactly_once none; the counts agree and each term is explained where it first appears', async () => {
  const json = join(dir, 'demo.json');
  const { code, stdout, stderr } = await new Promise<{ code: number; stdout: string; stderr: string }>((resolve) => {
    execFile(
      process.execPath,
      ['--import', 'tsx', 'src/cli/main.ts', 'demo', '--bootstrap', testCluster().bootstrap, '--pg-url', PG_URL, '--json', json],
      { cwd: projectRoot(), timeout: 540_000, maxBuffer: 16 * 1024 * 1024 },
      (error, out, err) => resolve({ code: error ? (typeof error.code === 'number' ? error.code : 1) : 0, stdout: out, stderr: err }),
    );
  });
  console.log(stdout);
  assert.equal(code, 0, `demo exited ${code}\n${stderr}`);
  const result = JSON.parse(readFileSync(json, 'utf8')) as DemoReport;
  const { exactlyOnce: eos, atLeastOnce: alos, plannedKills } = result;

  assert.equal(eos.kills, plannedKills, 'every planned kill happened under exactly_once');
  assert.equal(alos.kills, plannedKills, 'every planned kill happened under at_least_once');
  assert.deepEqual({ duplicates: eos.duplicates, lost: eos.lost, wrongTotals: eos.wrongTotals, deadLettered: eos.deadLettered }, { duplicates: 0, lost: 0, wrongTotals: 0, deadLettered: 3 });
  assert.ok(eos.customers > 0, 'customer totals were compared');
  assert.ok(alos.duplicates > 0, 'at_least_once repeated records');
  assert.ok(alos.outputDuplicates > 0, 'the repeats reached the output topic, where a reader sees them');

  const lines = stdout.split('\n');
  const heading = lines.find((l) => l.includes('step 1/4'));
  assert.match(heading ?? '', new RegExp(`\\b${plannedKills} kills\\b`));
  assert.ok(lines.some((l) => l.startsWith(`exactly_once, ${eos.kills} kills at after-produce`)), 'the summary counts the kills the heading announced');
  assert.ok(lines.some((l) => l.startsWith(`at_least_once, ${alos.kills} kills at after-produce`)));
  assert.match(stdout, /sum of the amounts of its PAID orders/, 'says what the pipeline computes');
  assert.match(stdout, /A wrong total is /);

  // Each term's explanation follows the first line that uses it, with only other explanations between.
  for (const [term, pattern] of [
    ['read_committed', /\bread_committed\b/],
    ['dies at after-produce', /\bafter-produce\b/],
    ['end markers', /\bend markers?\b/],
    ['the reader', /\breader during the run\b/],
  ] as const) {
    const firstUse = lines.findIndex((l) => pattern.test(l) && !l.trimStart().startsWith('↳'));
    const explained = lines.findIndex((l) => l.trimStart().startsWith(`↳ ${term}:`));
    assert.ok(firstUse >= 0 && explained > firstUse, `${term} is explained after its first use`);
    assert.ok(lines.slice(firstUse + 1, explained).every((l) => l.trimStart().startsWith('↳')), `${term} is explained right under its first use`);
  }
});
