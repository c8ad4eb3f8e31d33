import { writeFileSync } from 'node:fs';
import { defineCommand } from './commands.ts';
import { Option, type Command } from 'commander';
import { runChaos } from '../verify/chaos/run-chaos.ts';
import { durationMs } from './duration-option.ts';
import { intAtLeast } from './int-option.ts';
import type { PipelineName } from '../verify/pipelines.ts';

export function registerChaos(program: Command): void {
  defineCommand(program, 'chaos')
    .option('--records <n>', 'input records', intAtLeast(1), 20000)
    .option('--replicas <n>', 'worker replicas', intAtLeast(1), 3)
    .option('--kills <n>', 'SIGKILLs of a random replica', intAtLeast(0), 5)
    .option('--broker-restarts <n>', 'broker restarts (SIGKILL + start)', intAtLeast(0), 0)
    .option('--brokers <n>', 'run on a cluster of n KRaft nodes (3: replication 3, min ISR 2), each behind a fault proxy', intAtLeast(1), 1)
    .option('--broker-kills <n>', 'with --brokers 3: kill -9 and restart a node, in turn a transaction coordinator of a worker, the group coordinator, an output partition leader', intAtLeast(0), 0)
    .option('--stalls <n>', "with --brokers 3: a worker's connections forward nothing for a few seconds (every other stall beyond the session timeout)", intAtLeast(0), 0)
    .option('--overlapping-restarts <n>', 'replace a replica the way rolling updates do: start the new process with its instance id, then SIGTERM the old one 0.5-3 s later', intAtLeast(0), 0)
    .option('--duplicate-instance <n>', 'run two live processes with one instance id (alternately: a second one beside a live replica; two at once in place of a SIGKILLed one)', intAtLeast(0), 0)
    .option('--scale [n]', 'add n replicas (default 1) at 30 % of the feed and remove as many at 70 % (--replicas 1 --scale 2: 1 → 3 → 1)', intAtLeast(1))
    .option('--poison <n>', 'malformed records to inject', intAtLeast(0), 0)
    .option('--seed <n>', 'fixes the input and the kill schedule', intAtLeast(0), 42)
    .addOption(new Option('--guarantee <g>', 'processing guarantee').choices(['exactly_once', 'at_least_once']).default('exactly_once'))
    .addOption(new Option('--topology <name>', 'the example topology to run').choices(['orders', 'word-count', 'enrichment', 'sessions', 'heartbeats', 'sliding', 'foreign-key', 'enrichment-versioned']).default('orders'))
    .option('--feed-ms <ms>', 'how long the input keeps arriving', intAtLeast(0), 20000)
    .option('--event-time-age <age>', 'stamp the input that long before now (30d, 12h, 90m, 45s, ms): every schedule as a backfill of old records', durationMs, 0)
    .option('--backlog', 'write the whole input before the workers start (kills still land over --feed-ms)')
    .addOption(new Option('--format <format>', 'orders input format (avro: registry Avro; starts the registry too)').choices(['json', 'avro']).default('json'))
    .option('--bootstrap <servers>', 'use a running broker instead of starting one')
    .option('--registry-url <url>', 'with --bootstrap and --format avro: the schema registry to use')
    .option('--cache-max-records <n>', "the workers' record cache: keys each aggregate holds back until the commit (0: off; default: bounded by bytes only)", intAtLeast(0))
    .addOption(new Option('--state-store <kind>', 'persistent: LMDB stores that a killed replica resumes from, with running checkpoints every second').choices(['memory', 'persistent']).default('memory'))
    .option('--standby-replicas <n>', 'with --state-store persistent: warm copies of each stateful task on n other replicas', intAtLeast(0))
    .option('--threads <n>', "the workers' processing threads (each hosts tasks with their stores; 0: all on the main thread; default: the workers' default)", intAtLeast(0))
    .option('--json <file>', 'write the result as JSON')
    .action(async (o: Record<string, string | number | boolean | undefined>) => {
      const result = await runChaos({
        records: Number(o.records),
        replicas: Number(o.replicas),
        kills: Number(o.kills),
        brokerRestarts: Number(o.brokerRestarts),
        brokers: Number(o.brokers),
        brokerKills: Number(o.brokerKills),
        stalls: Number(o.stalls),
        overlappingRestarts: Number(o.overlappingRestarts),
        duplicateInstances: Number(o.duplicateInstance),
        scale: o.scale === true ? 1 : typeof o.scale === 'number' ? o.scale : 0,
        poison: Number(o.poison),
        seed: Number(o.seed),
        guarantee: o.guarantee as 'exactly_once' | 'at_least_once',
        pipeline: o.topology as PipelineName,
        feedMs: Number(o.feedMs),
        backlog: o.backlog === true,
        eventTimeAgeMs: Number(o.eventTimeAge),
        format: o.format === 'avro' ? 'avro' : 'json',
        ...(o.cacheMaxRecords === undefined ? {} : { cacheMaxRecords: Number(o.cacheMaxRecords) }),
        ...(o.threads === undefined ? {} : { threads: Number(o.threads) }),
        ...(o.standbyReplicas === undefined ? {} : { standbyReplicas: Number(o.standbyReplicas) }),
        stateStore: o.stateStore === 'persistent' ? 'persistent' : 'memory',
        ...(typeof o.bootstrap === 'string' ? { bootstrap: o.bootstrap } : {}),
        ...(typeof o.registryUrl === 'string' ? { registryUrl: o.registryUrl } : {}),
        log: (line) => console.error(`chaos: ${line}`),
      });
      const { verify: report, ...summary } = result;
      const json = JSON.stringify({ ...summary, examples: report.examples }, null, 2);
      if (typeof o.json === 'string') writeFileSync(o.json, json);
      console.log(json);
      if (!result.ok && result.guarantee === 'exactly_once') process.exitCode = 1;
    });
}
