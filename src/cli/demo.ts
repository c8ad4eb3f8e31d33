import { writeFileSync } from 'node:fs';
import { defineCommand } from './commands.ts';
import { join } from 'node:path';
import { Option, type Command } from 'commander';
import { startLocalCluster, stopLocalCluster } from '../kafka/local-cluster.ts';
import { defaultClusterDir } from '../kafka/cluster-info.ts';
import { runChaos } from '../verify/chaos/run-chaos.ts';
import type { ChaosOptions } from '../verify/chaos/options.ts';
import type { ChaosResult } from '../verify/chaos/result.ts';
import { runEffectsChaos, type EffectsChaosResult } from '../verify/effects-chaos.ts';
import { TermExplainer } from './demo-terms.ts';
import { intAtLeast } from './int-option.ts';

interface Row {
  readonly step: string;
  readonly measured: string;
  readonly verdict: string;
}

/** What one orders run showed, as the summary and `--json` give it. */
export interface OrdersStep {
  readonly guarantee: string;
  /** Replicas that died at after-produce: each one is a kill. */
  readonly kills: number;
  readonly duplicates: number;
  /** Of the duplicates, those in the output topic (the rest are in the intermediate repartition topics). */
  readonly outputDuplicates: number;
  readonly lost: number;
  readonly wrongTotals: number;
  readonly customers: number;
  readonly inputs: number;
  /** Output records the live read_committed reader was given. */
  readonly readerRecords: number;
  readonly abortedSeenByReadUncommitted: number;
  readonly deadLettered: number;
}

/** What `--json` writes. */
export interface DemoReport {
  readonly plannedKills: number;
  readonly killPhase: string;
  readonly exactlyOnce: OrdersStep;
  readonly atLeastOnce: OrdersStep;
  readonly effects: readonly EffectsChaosResult[];
  readonly rows: readonly Row[];
}

interface DemoOptions {
  readonly records: number;
  readonly format: string;
  readonly pgUrl: string;
  readonly bootstrap?: string;
  readonly registryUrl?: string;
  readonly json?: string;
}

const KILLS = 3;
const POISON = 3;
const KILL_PHASE = 'after-produce';

const terms = new TermExplainer();
const say = (line: string) => process.stdout.write(`${line}\n`);
/** A line whose terms are new gets them explained under it. */
const tell = (line: string) => {
  for (const l of terms.annotate(line, line.startsWith('  ') ? '    ' : '  ')) say(l);
};

function bar(done: number, total: number, label: string): void {
  const width = 30;
  const filled = Math.round((done / total) * width);
  say('');
  tell(`[${'#'.repeat(filled)}${'.'.repeat(width - filled)}] step ${done}/${total}: ${label}`);
}

function ordersStep(r: ChaosResult): OrdersStep {
  return {
    guarantee: r.guarantee,
    kills: r.killPhases[KILL_PHASE] ?? 0,
    duplicates: r.duplicates,
    outputDuplicates: r.verify.duplicatesByTopic[r.outputTopic] ?? 0,
    lost: r.lost,
    wrongTotals: r.aggregateMismatches,
    customers: r.verify.aggregateKeys,
    inputs: r.records,
    readerRecords: r.liveReader.records,
    abortedSeenByReadUncommitted: r.abortedSeenByReadUncommitted,
    deadLettered: r.dlqRecords,
  };
}

/** "3 kills", or "2 of 3 kills" when a replica never reached the phase: the heading and the summary then still agree. */
const killCount = (kills: number): string => (kills === KILLS ? `${KILLS} kills` : `${kills} of ${KILLS} planned kills`);

function tellVerified(s: OrdersStep): void {
  const intermediate = s.duplicates - s.outputDuplicates;
  tell(
    `  verified: ${s.duplicates} duplicates (${s.outputDuplicates} in the output topic, ${intermediate} in the intermediate repartition topics), ${s.lost} lost, ${s.wrongTotals} wrong totals of ${s.customers} customers`,
  );
  const repeats = s.outputDuplicates > 0 ? `, ${s.outputDuplicates} of them repeats` : '';
  tell(`  the reader's ${s.readerRecords} records for ${s.inputs} inputs: one per update of a customer's total${repeats}; poison records, repeated event ids and older versions make none`);
}

async function ordersRuns(opts: DemoOptions, bootstrap: string, clusterDir: string | undefined, rows: Row[]): Promise<{ exactlyOnce: OrdersStep; atLeastOnce: OrdersStep }> {
  const format = opts.format === 'avro' ? 'avro' : 'json';
  // Every kill is a replica dying between its output flush and its offset commit, never at a random
  // moment: a random kill can miss that gap, and at_least_once then shows no duplicate. The record
  // cache is off so that each update is an output record: a repeated input is then a repeated output.
  const base: ChaosOptions = {
    records: opts.records,
    replicas: 2,
    kills: KILLS,
    poison: POISON,
    seed: 7,
    feedMs: 12_000,
    bootstrap,
    ...(clusterDir ? { clusterDir } : {}),
    ...(opts.registryUrl ? { registryUrl: opts.registryUrl } : {}),
    phase: KILL_PHASE,
    onlyAtPhase: true,
    cacheMaxRecords: 0,
    format,
    log: (line) => tell(`  ${line}`),
  };
  bar(1, 4, `exactly_once: 2 replicas, ${KILLS} kills, each a replica that dies at ${KILL_PHASE}; ${POISON} poison records among the inputs`);
  const eos = ordersStep(await runChaos({ ...base, guarantee: 'exactly_once' }));
  tellVerified(eos);
  const eosHolds = eos.duplicates + eos.lost + eos.wrongTotals === 0;
  rows.push({ step: `exactly_once, ${killCount(eos.kills)} at ${KILL_PHASE}`, measured: `${eos.duplicates} duplicates, ${eos.lost} lost, ${eos.wrongTotals} wrong totals`, verdict: eosHolds ? 'holds' : 'VIOLATED' });
  rows.push({ step: 'the same output read with read_uncommitted', measured: `${eos.abortedSeenByReadUncommitted} aborted records visible`, verdict: 'a careless reader sees them' });
  rows.push({ step: 'poison records (malformed bytes)', measured: `${eos.deadLettered} of ${POISON} in the DLQ, partitions not blocked`, verdict: eos.deadLettered === POISON ? 'each once' : 'MISMATCH' });

  bar(2, 4, `at_least_once: the same inputs, replicas and ${KILLS} kills at ${KILL_PHASE}`);
  const alos = ordersStep(await runChaos({ ...base, guarantee: 'at_least_once' }));
  tellVerified(alos);
  rows.push({
    step: `at_least_once, ${killCount(alos.kills)} at ${KILL_PHASE}`,
    measured: `${alos.duplicates} duplicates, ${alos.lost} lost, ${alos.wrongTotals} wrong totals`,
    verdict: alos.duplicates > 0 ? 'duplicates, as expected' : 'NO DUPLICATES: no kill hit a batch with outputs',
  });
  return { exactlyOnce: eos, atLeastOnce: alos };
}

const EFFECT_LABELS: Record<string, string> = {
  'naive-sql': 'naive UPDATE balance = balance - x',
  'inbox-sql': 'inbox table + debit in one DB transaction',
  'naive-http': 'HTTP charge without an idempotency key',
  'key-http': 'HTTP charge with Idempotency-Key (server dedupes)',
};

async function effectRuns(opts: DemoOptions, bootstrap: string, rows: Row[]): Promise<EffectsChaosResult[]> {
  bar(3, 4, 'a debit outside Kafka (PostgreSQL, HTTP): each of 4 ways, 2 SIGKILLs between the effect and the commit');
  const runs = await Promise.all((['naive-sql', 'inbox-sql', 'naive-http', 'key-http'] as const).map((mode) => runEffectsChaos({ bootstrap, pgUrl: opts.pgUrl, mode, records: 200, kills: 2, log: (l) => tell(`  ${l}`) })));
  for (const r of runs) {
    rows.push({
      step: `${EFFECT_LABELS[r.mode] ?? r.mode}, ${r.kills} kills`,
      measured: `${r.effects} effects for ${r.records} records (${r.duplicateEffects} duplicates, balances ${r.balanceDrift} off)`,
      verdict: r.idempotent ? (r.duplicateEffects === 0 && r.balanceDrift === 0 ? 'idempotent: exactly one effect' : 'VIOLATED') : 'outside the transaction: repeats',
    });
  }
  return runs;
}

function printTable(rows: readonly Row[]): void {
  const stepWidth = Math.max(...rows.map((r) => r.step.length), 4);
  const measuredWidth = Math.max(...rows.map((r) => r.measured.length), 8);
  say(`\n${'step'.padEnd(stepWidth)} | ${'measured'.padEnd(measuredWidth)} | verdict`);
  say(`${'-'.repeat(stepWidth)}-+-${'-'.repeat(measuredWidth)}-+--------`);
  for (const r of rows) say(`${r.step.padEnd(stepWidth)} | ${r.measured.padEnd(measuredWidth)} | ${r.verdict}`);
}

export function registerDemo(program: Command): void {
  defineCommand(program, 'demo')
    .option('--records <n>', 'order events per run', intAtLeast(1), 20000)
    .addOption(new Option('--format <format>', 'order events format (avro: registry Avro in the Confluent wire format; starts the schema registry)').choices(['json', 'avro']).default('json'))
    .option('--pg-url <url>', 'PostgreSQL for the external-effect step', process.env.ONCEFLOW_PG_URL ?? 'postgres://postgres@127.0.0.1:5432/test')
    .option('--bootstrap <servers>', 'use a running broker instead of starting a local one')
    .option('--registry-url <url>', 'with --bootstrap and --format avro: the schema registry to use')
    .option('--json <file>', 'also write the measured figures as JSON')
    .action(async (opts: DemoOptions) => {
      const started = Date.now();
      const avro = opts.format === 'avro';
      say(`onceflow demo: where exactly-once holds and where it stops, each step measured on a ${opts.bootstrap ? 'running' : 'local'} Kafka.`);
      say(
        `The pipeline (topology/orders.ts) reads ${opts.records} order events (${avro ? 'registry Avro' : 'JSON'}: CREATED, PAID, REFUNDED or CANCELLED; some sent twice, a few out of order) and ${POISON} malformed records, and writes each customer's total: the sum of the amounts of its PAID orders, one output record per update.`,
      );
      say("A wrong total is a customer whose last output differs from the total the verifier recomputes from the inputs on its own.");
      const dir = join(defaultClusterDir(), `demo-${process.pid}`);
      let bootstrap = opts.bootstrap;
      if (!bootstrap) {
        const cluster = await startLocalCluster({ dir, withRegistry: avro });
        bootstrap = cluster.bootstrap;
        say(`local Kafka ${cluster.bootstrap} answered after ${cluster.brokerStartMs} ms`);
      }
      const rows: Row[] = [];
      try {
        const orders = await ordersRuns(opts, bootstrap, opts.bootstrap ? undefined : dir, rows);
        const effects = await effectRuns(opts, bootstrap, rows);
        bar(4, 4, 'summary');
        printTable(rows);
        const report: DemoReport = { plannedKills: KILLS, killPhase: KILL_PHASE, ...orders, effects, rows };
        if (opts.json) writeFileSync(opts.json, JSON.stringify(report, null, 2));
        // A demo whose story did not show is a failure to look into, not a result.
        if (rows.some((r) => /VIOLATED|MISMATCH|NO DUPLICATES/.test(r.verdict))) process.exitCode = 1;
      } finally {
        if (!opts.bootstrap) await stopLocalCluster(dir);
      }
      say(`\ndemo finished in ${((Date.now() - started) / 1000).toFixed(0)} s${opts.bootstrap ? '' : '; the local Kafka is stopped'}.`);
    });
}
