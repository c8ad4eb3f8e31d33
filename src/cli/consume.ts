import { Option, type Command } from 'commander';
import { followTopic, type IsolationLevel } from '../kafka/read-topic.ts';
import { connect } from './connection.ts';
import { intAtLeast } from './int-option.ts';
import { printedJson, RecordDecoder } from './record-format.ts';

interface ConsumeOptions {
  fromBeginning?: boolean;
  isolation: IsolationLevel;
  max?: number;
  idleMs?: number;
  headers?: boolean;
  bootstrap?: string;
  registryUrl?: string;
}

export function registerConsume(program: Command): void {
  program
    .command('consume <topic>')
    .description('print the records of a topic as JSON lines (registry Avro, JSON and text decoded), outside any consumer group')
    .option('--from-beginning', 'from the first record of each partition (default: only new records)')
    .addOption(new Option('--isolation <level>', 'read_committed skips aborted transactions; read_uncommitted shows them').choices(['read_committed', 'read_uncommitted']).default('read_committed'))
    .option('--max <n>', 'stop after this many records', intAtLeast(1))
    .option('--idle-ms <ms>', 'stop after this long without a record', intAtLeast(1))
    .option('--headers', 'show each record\'s headers (the lineage header included)')
    .option('--bootstrap <servers>', 'Kafka bootstrap servers (env ONCEFLOW_BOOTSTRAP; default: the `dev up` cluster)')
    .option('--registry-url <url>', 'schema registry to decode Avro (env ONCEFLOW_REGISTRY_URL; default: the `dev up` registry)')
    .action(async (topic: string, opts: ConsumeOptions) => {
      const connection = await connect({ bootstrap: opts.bootstrap, registryUrl: opts.registryUrl });
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
        for await (const record of followTopic(connection.bootstrap, topic, { fromBeginning: opts.fromBeginning === true, isolation: opts.isolation, signal: stop.signal })) {
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
