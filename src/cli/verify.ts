import type { Command } from 'commander';
import { loadTopology } from '../dsl/load.ts';
import { compile } from '../graph/compile.ts';
import { pipelines, type PipelineName } from '../verify/pipelines.ts';
import { formatReport, verify } from '../verify/verify.ts';
import { ConfigError } from '../runtime/config.ts';
import { connect } from './connection.ts';

export function registerVerify(program: Command): void {
  program
    .command('verify')
    .description('check a run\'s committed output against its input: no duplicate, no loss, exact aggregates (exit 1 on any violation)')
    .requiredOption('--input <topic>', 'the input topic')
    .requiredOption('--output <topic>', 'the output (result) topic')
    .requiredOption('--app-id <id>', 'the application id (names its repartition and dead-letter topics)')
    .option('--pipeline <name>', `expectation model: ${Object.keys(pipelines).join(' | ')}`, 'orders')
    .option('--bootstrap <servers>', 'Kafka bootstrap servers (env ONCEFLOW_BOOTSTRAP; default: the `dev up` cluster)')
    .option('--read-uncommitted', 'also count the aborted records a read_uncommitted reader sees')
    .option('--json', 'print the report as JSON')
    .action(async (opts: { input: string; output: string; appId: string; pipeline: string; bootstrap?: string; readUncommitted?: boolean; json?: boolean }) => {
      const pipeline = pipelines[opts.pipeline as PipelineName];
      if (!pipeline) throw new ConfigError(`--pipeline must be one of ${Object.keys(pipelines).join(', ')}, not ${opts.pipeline}`, [{ field: 'pipeline', message: 'unknown' }]);
      const { bootstrap } = await connect({ bootstrap: opts.bootstrap });
      const compiled = compile(await loadTopology(pipeline.file), { appId: opts.appId });
      const repartition = compiled.topics.filter((t) => t.kind === 'repartition').map((t) => t.name);
      const report = await verify({
        bootstrap,
        inputTopic: opts.input,
        lineageTopics: [...repartition, opts.output],
        resultTopic: opts.output,
        deadLetterTopic: compiled.deadLetterTopic,
        model: pipeline.model,
        countUncommitted: opts.readUncommitted ?? false,
      });
      console.log(opts.json ? JSON.stringify(report, null, 2) : formatReport(report));
      if (!report.ok) process.exitCode = 1;
    });
}
