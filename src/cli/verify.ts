import type { Command } from 'commander';
import { defineCommand } from './commands.ts';
import { pathToFileURL } from 'node:url';
import { resolve } from 'node:path';
import { OnceflowError } from '../errors.ts';
import { loadTopology } from '../dsl/load.ts';
import { compile } from '../graph/compile.ts';
import { formatTopologyReport, verifyTopology } from '../verify/lineage-check.ts';
import { pipelines, type PipelineName } from '../verify/pipelines.ts';
import { formatReport, verify, type ExpectationModel } from '../verify/verify.ts';
import { addClientOptions } from './client-options.ts';
import { connect, type Connection, type ConnectionFlags } from './connection.ts';

/** verify was given options that do not make one check: said before anything is read. */
export class VerifyUsageError extends OnceflowError {
  readonly code = 'VERIFY_USAGE';
}

export interface VerifyOptions extends ConnectionFlags {
  input?: string;
  output?: string;
  appId?: string;
  pipeline?: string;
  model?: string;
  result?: string;
  readUncommitted?: boolean;
  json?: boolean;
}

async function loadModel(file: string): Promise<ExpectationModel> {
  let mod: { default?: unknown };
  try {
    mod = (await import(pathToFileURL(resolve(file)).href)) as { default?: unknown };
  } catch (e) {
    throw new VerifyUsageError(`could not load model file ${file}: ${e instanceof Error ? e.message : String(e)}`);
  }
  const model = mod.default as Partial<ExpectationModel> | undefined;
  if (typeof model?.name !== 'string' || typeof model.expectedProducers !== 'function') {
    throw new VerifyUsageError(`${file} must default-export an expectation model: { name, expectedProducers(inputs), expectedFinal?(inputs), readOutput?(record) }`);
  }
  return model as ExpectationModel;
}

/** What each reader `verify` makes is given: the connection's address and client options. */
export const verifyClients = (connection: Pick<Connection, 'bootstrap' | 'clientOptions'>): { bootstrap: string; clientOptions: Connection['clientOptions'] } => ({
  bootstrap: connection.bootstrap,
  clientOptions: connection.clientOptions,
});

export function registerVerify(program: Command): void {
  addClientOptions(defineCommand(program, 'verify')
    .option('--app-id <id>', 'the application id (default: the topology\'s)')
    .option('--model <file>', 'a module default-exporting an expectation model (src/verify/verify.ts ExpectationModel) for loss and aggregate checks')
    .option('--result <topic>', 'with --model: the output topic whose last value per key is compared (default: the only output)')
    .option('--input <topic>', 'without a topology file: the input topic of a built-in example pipeline')
    .option('--output <topic>', 'without a topology file: its output topic')
    .option('--pipeline <name>', `without a topology file: the built-in model, ${Object.keys(pipelines).join(' | ')}`, 'orders')
    .option('--read-uncommitted', 'built-in pipelines: also count the aborted records a read_uncommitted reader sees')
    .option('--json', 'print the report as JSON'))
    .action(async (topologyFile: string | undefined, opts: VerifyOptions) => {
      if (topologyFile === undefined) {
        if (!opts.input || !opts.output || !opts.appId) throw new VerifyUsageError('give a topology file (`onceflow verify topology.ts`), or --input, --output and --app-id for a built-in pipeline');
        const pipeline = pipelines[opts.pipeline as PipelineName];
        if (!pipeline) throw new VerifyUsageError(`--pipeline must be one of ${Object.keys(pipelines).join(', ')}, not ${opts.pipeline}`);
        const clients = verifyClients(await connect(opts));
        const compiled = compile(await loadTopology(pipeline.file), { appId: opts.appId });
        const repartition = compiled.topics.filter((t) => t.kind === 'repartition').map((t) => t.name);
        const report = await verify({
          ...clients,
          inputTopic: opts.input,
          lineageTopics: [...repartition, opts.output],
          resultTopic: opts.output,
          deadLetterTopic: compiled.deadLetterTopic,
          model: pipeline.model,
          countUncommitted: opts.readUncommitted ?? false,
        });
        console.log(opts.json ? JSON.stringify(report, null, 2) : formatReport(report));
        if (!report.ok) process.exitCode = 1;
        return;
      }
      const compiled = compile(await loadTopology(topologyFile), opts.appId ? { appId: opts.appId } : {});
      const model = opts.model ? await loadModel(opts.model) : undefined;
      const clients = verifyClients(await connect(opts));
      const named = (kind: string) => compiled.topics.filter((t) => t.kind === kind).map((t) => t.name);
      const report = await verifyTopology({
        ...clients,
        groupId: compiled.appId,
        sourceTopics: named('source'),
        repartitionTopics: named('repartition'),
        outputTopics: named('sink'),
        deadLetterTopic: compiled.deadLetterTopic,
        ...(model ? { model } : {}),
        ...(opts.result ? { resultTopic: opts.result } : {}),
      });
      console.log(opts.json ? JSON.stringify(report, null, 2) : formatTopologyReport(report));
      if (!report.ok) process.exitCode = 1;
    });
}
