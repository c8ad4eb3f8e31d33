import { Option, type Command } from 'commander';
import { defineCommand } from './commands.ts';
import { followTopic, type IsolationLevel } from '../kafka/read-topic.ts';
import { addClientOptions } from './client-options.ts';
import { connect, type ConnectionFlags } from './connection.ts';
import { intAtLeast } from './int-option.ts';
import { printedJson, RecordDecoder } from './record-format.ts';

interface ConsumeOptions extends ConnectionFlags {
  fromBeginning?: boolean;
  isolation: IsolationLevel;
  max?: number;
  idleMs?: number;
  headers?: boolean;
}

export function registerConsume(program: Command): void {
  addClientOptions(defineCommand(program, 'consume')
    .option('--from-beginning', 'from the first record of each partition (default: only new records)')
    .addOption(new Option('--isolation <level>', 'read_committed skips aborted transactions; read_uncommitted shows them').choices(['read_committed', 'read_uncommitted']).default('read_committed'))
    .option('--max <n>', 'stop after this many records', intAtLeast(1))
    .option('--idle-ms <ms>', 'stop after this long without a record', intAtLeast(1))
    .option('--headers', 'show each record\'s headers (the lineage header included)'),
    { registryHelp: 'schema registry to decode Avro, Protobuf and JSON Schema records (env ONCEFLOW_REGISTRY_URL; default: the `dev up` registry)' },
  )
    .action(async (topic: string, opts: ConsumeOptions) => {
      const connection = await connect(opts);
      const decoder = new RecordDecoder(connection.registryUrl);
      const stop = new AbortController();
      const onSignal = () => stop.abort();
      process.once('SIGINT', onSignal);
      process.once('SIGTERM', onSignal);
      let idle: NodeJS.Timeout | undefined;
      const armIdle = () => {
        if (opts.idleMs === undefined) return;
        clearTimeout(idle);
        idle = setTimeout(() => stop.abort(), opts.idleMs);
      };
      armIdle();
      let count = 0;
      try {
        for await (const record of followTopic(connection.bootstrap, topic, { fromBeginning: opts.fromBeginning === true, isolation: opts.isolation, clientOptions: connection.clientOptions, signal: stop.signal })) {
          process.stdout.write(`${printedJson(await decoder.print(record, opts.headers === true))}\n`);
          armIdle();
          if (opts.max !== undefined && ++count >= opts.max) break;
        }
      } finally {
        clearTimeout(idle);
        process.off('SIGINT', onSignal);
        process.off('SIGTERM', onSignal);
      }
    });
}
