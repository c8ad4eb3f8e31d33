import { join } from 'node:path';
import { Option, type Command } from 'commander';
import { startLocalCluster, stopLocalCluster } from '../kafka/local-cluster.ts';
import { defaultClusterDir } from '../kafka/cluster-info.ts';
import { runChaos } from '../verify/chaos/run-chaos.ts';
import type { ChaosResult } from '../verify/chaos/result.ts';
import { runEffectsChaos } from '../verify/effects-chaos.ts';
import { intAtLeast } from './int-option.ts';

interface Row {
  readonly step: string;
  readonly measured: string;
  readonly verdict: string;
}

const say = (line: string) => process.stdout.write(`${line}\n`);

function bar(done: number, total: number, label: string): void {
  const width = 30;
  const filled = Math.round((done / total) * width);
  process.stdout.write(`\n[${'#'.repeat(filled)}${'.'.repeat(width - filled)}] step ${done}/${total}: ${label}\n`);
}

export function registerDemo(program: Command): void {
  program
    .command('demo')
    .description('the story of where exactly-once holds and where it stops, each step measured on a local Kafka')
    .option('--records <n>', 'input records per run', intAtLeast(1), 20000)
    .addOption(new Option('--format <format>', 'order events format (avro: registry Avro in the Confluent wire format; starts the schema registry)').choices(['json', 'avro']).default('json'))
    .option('--pg-url <url>', 'PostgreSQL for the external-effect step', process.env.ONCEFLOW_PG_URL ?? 'postgres://postgres@127.0.0.1:5432/test')
    .action(async (opts: { records: number; pgUrl: string; format: string }) => {
      const records = opts.records;
      const format = opts.format === 'avro' ? 'avro' : 'json';
      const started = Date.now();
      const dir = join(defaultClusterDir(), `demo-${process.pid}`);
      say(`onceflow demo: a local single-node Kafka starts, worker replicas process order events (${format === 'avro' ? 'registry Avro' : 'JSON'}), and replicas are killed with SIGKILL mid-stream.`);
      const cluster = await startLocalCluster({ dir, withRegistry: format === 'avro' });
      say(`local Kafka ${cluster.bootstrap} answered after ${cluster.brokerStartMs} ms`);
      const rows: Row[] = [];
      try {
        const total = 4;
        // Every restarted replica dies again right after producing a batch, before its commit: the moment that tells the guarantees apart.
        const base = { records, replicas: 2, kills: 3, poison: 3, seed: 7, feedMs: 12_000, bootstrap: cluster.bootstrap, clusterDir: dir, phase: 'after-produce', format } as const;
        bar(1, total, 'exactly_once, 2 replicas, 3 SIGKILLs (each restart dies again between produce and commit), 3 poison records');
        const eos: ChaosResult = await runChaos({ ...base, guarantee: 'exactly_once', log: (l) => say(`  ${l}`) });
        say(`  verified read_committed output: ${eos.duplicates} duplicates, ${eos.lost} lost, ${eos.aggregateMismatches} wrong customer totals`);
        const killed = (r: ChaosResult) => Object.values(r.killPhases).reduce((a, b) => a + b, 0);
        rows.push({ step: `exactly_once under ${killed(eos)} SIGKILLs (read_committed)`, measured: `${eos.duplicates} duplicates, ${eos.lost} lost, ${eos.aggregateMismatches} wrong totals`, verdict: eos.duplicates + eos.lost + eos.aggregateMismatches === 0 ? 'holds' : 'VIOLATED' });
        rows.push({ step: 'same topics read with read_uncommitted', measured: `${eos.abortedSeenByReadUncommitted} aborted records visible`, verdict: 'a careless reader sees them' });
        rows.push({ step: 'poison records (malformed bytes)', measured: `${eos.dlqRecords} of ${eos.poisonInjected} in the DLQ, partitions not blocked`, verdict: eos.dlqRecords === eos.poisonInjected ? 'each once' : 'MISMATCH' });

        bar(2, total, 'at_least_once under the same kills');
        const alos = await runChaos({ ...base, guarantee: 'at_least_once', log: (l) => say(`  ${l}`) });
        say(`  ${alos.duplicates} duplicate records, ${alos.aggregateMismatches} wrong customer totals`);
        rows.push({ step: `at_least_once under ${killed(alos)} SIGKILLs, same schedule`, measured: `${alos.duplicates} duplicates, ${alos.aggregateMismatches} wrong totals`, verdict: alos.duplicates > 0 ? 'duplicates, as expected' : 'no kill hit an uncommitted batch this time' });

        bar(3, total, 'a debit outside Kafka (PostgreSQL, HTTP), 2 SIGKILLs between the effect and the commit');
        const effectRuns = await Promise.all(
          (['naive-sql', 'inbox-sql', 'naive-http', 'key-http'] as const).map((mode) => runEffectsChaos({ bootstrap: cluster.bootstrap, pgUrl: opts.pgUrl, mode, records: 200, kills: 2, log: (l) => say(`  ${l}`) })),
        );
        const label: Record<string, string> = {
          'naive-sql': 'naive UPDATE balance = balance - x',
          'inbox-sql': 'inbox table + debit in one DB transaction',
          'naive-http': 'HTTP charge without an idempotency key',
          'key-http': 'HTTP charge with Idempotency-Key (server dedupes)',
        };
        for (const r of effectRuns) {
          rows.push({
            step: `${label[r.mode] ?? r.mode}, ${r.kills} kills`,
            measured: `${r.effects} effects for ${r.records} records (${r.duplicateEffects} duplicates, balances ${r.balanceDrift} off)`,
            verdict: r.idempotent ? (r.duplicateEffects === 0 && r.balanceDrift === 0 ? 'idempotent: exactly one effect' : 'VIOLATED') : 'outside the transaction: repeats',
          });
        }
        bar(4, total, 'summary');
      } finally {
        await stopLocalCluster(dir);
      }
      const w1 = Math.max(...rows.map((r) => r.step.length), 4);
      const w2 = Math.max(...rows.map((r) => r.measured.length), 8);
      say(`\n${'step'.padEnd(w1)} | ${'measured'.padEnd(w2)} | verdict`);
      say(`${'-'.repeat(w1)}-+-${'-'.repeat(w2)}-+--------`);
      for (const r of rows) say(`${r.step.padEnd(w1)} | ${r.measured.padEnd(w2)} | ${r.verdict}`);
      say(`\ndemo finished in ${((Date.now() - started) / 1000).toFixed(0)} s; the local Kafka is stopped.`);
    });
}
