import type { Command } from 'commander';
import { defineCommand } from './commands.ts';
import { compile } from '../graph/compile.ts';
import { loadTopology } from '../dsl/load.ts';
import { withAdmin } from '../kafka/admin.ts';
import { ReadableProbe } from '../kafka/readable-probe.ts';
import { DeadLetterFeed } from '../console/dead-letter-feed.ts';
import { LiveState } from '../console/live-state.ts';
import { startConsoleServer } from '../console/server.ts';
import { topologyGraph, type TopologyGraph } from '../console/topology-graph.ts';
import { describeJson } from './describe.ts';
import { intAtLeast } from './int-option.ts';
import { addGroupOptions, groupConfig, type GroupFlags } from './status.ts';
import { typecheckTopology } from './typecheck.ts';

interface ConsoleFlags extends GroupFlags {
  port: number;
  host: string;
  workerUrl?: string[];
  workerPort?: number;
  refreshMs: number;
  /** false with --no-typecheck. */
  typecheck?: boolean;
}

export interface ConsoleIo {
  out(text: string): void;
  /** Stops the console; default: SIGINT / SIGTERM. */
  readonly signal?: AbortSignal;
}

async function graphOf(file: string, flags: ConsoleFlags): Promise<{ graph: TopologyGraph; deadLetterTopic: string }> {
  if (flags.typecheck !== false) await typecheckTopology(file);
  const description = describeJson(compile(await loadTopology(file), flags.appId !== undefined ? { appId: flags.appId } : {}));
  return { graph: topologyGraph(description), deadLetterTopic: description.deadLetterTopic };
}

function untilSignalled(signal: AbortSignal | undefined): Promise<void> {
  return new Promise((resolve) => {
    if (signal) {
      if (signal.aborted) resolve();
      else signal.addEventListener('abort', () => resolve(), { once: true });
      return;
    }
    process.once('SIGINT', () => resolve());
    process.once('SIGTERM', () => resolve());
  });
}

export function registerConsole(program: Command, io: ConsoleIo = { out: (t) => process.stdout.write(t) }): void {
  addGroupOptions(
    defineCommand(program, 'console'),
  )
    .option('--port <port>', 'HTTP port of the page (0: any free one)', intAtLeast(0), 8080)
    .option('--host <host>', 'address to listen on (0.0.0.0 to reach it from elsewhere)', '127.0.0.1')
    .option('--worker-url <url>', "a worker's /metrics URL (its --http-port server), repeatable: the member's own numbers", (v: string, prev: string[] = []) => [...prev, v])
    .option('--worker-port <port>', "else read http://<member host>:<port>/metrics for every member (one port for all replicas)", intAtLeast(1))
    .option('--refresh-ms <ms>', 'how often to refresh the live state', intAtLeast(200), 1_000)
    .option('--no-typecheck', 'load the topology without type-checking it first')
    .action(async (file: string | undefined, flags: ConsoleFlags) => {
      const topology = file === undefined ? undefined : await graphOf(file, flags);
      const config = await groupConfig(flags, topology?.graph.appId);
      const feed = new DeadLetterFeed(config.bootstrap, topology?.deadLetterTopic ?? `${config.appId}-dlq`, config.kafka);
      const probe = new ReadableProbe(config.bootstrap, config.kafka);
      await withAdmin(
        config.bootstrap,
        async (admin) => {
          const live = new LiveState({
            appId: config.appId,
            admin,
            deadLetters: feed,
            intervalMs: flags.refreshMs,
            ...(flags.workerUrl ? { memberUrls: flags.workerUrl } : {}),
            ...(flags.workerPort !== undefined ? { memberPort: flags.workerPort } : {}),
            probe,
          });
          const server = await startConsoleServer({ graph: topology?.graph, latest: () => live.latest, subscribe: (l) => live.subscribe(l) }, { port: flags.port, host: flags.host });
          live.start();
          io.out(`onceflow console for ${config.appId}: ${server.url}${topology ? '' : ' (no topology file given: live state only)'}\n`);
          try {
            await untilSignalled(io.signal);
          } finally {
            await live.stop();
            await server.close();
            await feed.close();
            await probe.close();
          }
        },
        config.kafka,
      );
    });
}
