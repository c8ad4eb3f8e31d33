import type { Command } from 'commander';
import { defineCommand } from './commands.ts';
import { compile } from '../graph/compile.ts';
import { loadTopology } from '../dsl/load.ts';
import { Worker } from '../runtime/worker/worker.ts';
import type { WorkerEvent } from '../runtime/base/worker-events.ts';
import { runtimeTopology } from '../runtime/task/worker-topology.ts';
import { killAt } from '../runtime/base/faults.ts';
import { attachLogging, createLogger, startObservability, type ObservabilityServer } from '../observability/index.ts';
import { addConfigOptions, configFlagsFrom, type ConfigCommandOptions } from './config.ts';
import { resolveConfigSources, resolveRuntimeOptions, type RuntimeFlags } from './config-sources.ts';
import { bootstrapSource, devConnection, requireReachable } from './connection.ts';
import { typecheckTopology } from './typecheck.ts';
import { spawnProcessingThread } from './processing-thread.ts';

/**
 * After SIGTERM the process exits on its own at shutdownTimeoutMs plus this, whatever the worker is
 * doing: a pod's termination grace period must exceed the sum (deploy/kubernetes/statefulset.yaml).
 */
export const SHUTDOWN_EXIT_MARGIN_MS = 5_000;

interface RunOptions extends ConfigCommandOptions, RuntimeFlags {
  readonly events?: boolean;
  readonly metricsPort?: string;
  /** false with --no-typecheck. */
  readonly typecheck?: boolean;
  /** --reset-state, repeatable: stores whose state a topology change may drop. */
  readonly resetState?: readonly string[];
}

/**
 * Compiles a topology file into a worker; the config comes from flags over env over a file over the
 * `dev up` cluster. Fails with BROKER_UNREACHABLE, before anything starts, when no broker answers.
 */
export async function workerForFile(file: string, opts: RunOptions, env: NodeJS.ProcessEnv = process.env): Promise<Worker> {
  if (opts.typecheck !== false) await typecheckTopology(file);
  const builder = await loadTopology(file);
  const dev = devConnection();
  const { input, origin } = resolveConfigSources({ ...(opts.config ? { file: opts.config } : {}), env, flags: configFlagsFrom(opts), ...(dev ? { devCluster: dev } : {}) });
  const topology = compile(builder, input.appId ? { appId: input.appId } : {});
  // The chaos harness kills workers at points of the protocol it names in the environment.
  const worker = new Worker(runtimeTopology(topology), input, { faults: killAt(env.ONCEFLOW_CHAOS_KILL_AT), processingThread: { spawn: spawnProcessingThread, file }, resetStores: opts.resetState ?? [] });
  await requireReachable({ bootstrap: worker.config.bootstrap, source: bootstrapSource(origin.bootstrap, dev), dev }, worker.config.kafka);
  return worker;
}

export function registerRun(program: Command): void {
  const command = defineCommand(program, 'run')
    .option('--http-port <port>', 'serve /metrics, /healthz and /readyz on this port (env ONCEFLOW_HTTP_PORT)')
    .option('--metrics-port <port>', 'the same as --http-port (the name Prometheus set-ups look for)')
    .option('--log-level <level>', 'trace | debug | info | warn | error (env ONCEFLOW_LOG_LEVEL)')
    .option('--log-format <format>', 'json | pretty (env ONCEFLOW_LOG_FORMAT; default pretty on a terminal)')
    .option('--events', 'print each lifecycle event (commits included) as a JSON line on stdout')
    .option('--no-typecheck', 'load the topology without type-checking it first (a pass is cached, so a restart is not slowed)')
    .option('--reset-state <store>', 'repeatable: drop this store\'s state if the start check finds a change of the topology that needs it (renamed, new serde, new key); `onceflow upgrade check` lists them', (v: string, prev: string[] = []) => [...prev, v]);
  addConfigOptions(command).action(async (file: string, opts: RunOptions) => {
    const runtime = resolveRuntimeOptions(process.env, { ...opts, httpPort: opts.httpPort ?? opts.metricsPort }, process.stderr.isTTY);
    const worker = await workerForFile(file, opts);
    // Logs go to stderr so that stdout stays a clean stream of events for tools.
    const logging = attachLogging(worker, createLogger({ level: runtime.logLevel, pretty: runtime.logFormat === 'pretty', destination: process.stderr }));
    if (opts.events) worker.on('event', (e: WorkerEvent) => process.stdout.write(`${JSON.stringify({ at: Date.now(), ...e })}\n`));
    let observability: ObservabilityServer | undefined;
    if (runtime.httpPort !== undefined) observability = await startObservability(worker, { port: runtime.httpPort, dlqThreshold: runtime.dlqThreshold });
    let signalled = false;
    const shutdown = (signal: string) => {
      if (signalled) return;
      signalled = true;
      if (opts.events) process.stdout.write(`${JSON.stringify({ at: Date.now(), type: 'shutdown', signal })}\n`);
      // Bounded: a stuck broker must not keep a terminated pod alive forever.
      setTimeout(() => process.exit(1), worker.config.shutdownTimeoutMs + SHUTDOWN_EXIT_MARGIN_MS).unref();
      void worker.stop();
    };
    process.on('SIGTERM', () => shutdown('SIGTERM'));
    process.on('SIGINT', () => shutdown('SIGINT'));
    try {
      await worker.start();
      await worker.done();
    } catch (e) {
      observability?.readiness.markFatal(e instanceof Error ? e.message : String(e));
      throw e;
    } finally {
      logging.flush();
      await observability?.close();
    }
  });
}
