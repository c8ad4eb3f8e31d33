import { readFileSync } from 'node:fs';
import { defineCommand } from './commands.ts';
import { Option, type Command } from 'commander';
import { DEFAULT_BATCH_SIZE } from '../core/record-size.ts';
import { requireTopics, withAdmin, type ClientOptions } from '../kafka/admin.ts';
import { produceInOneTransaction } from '../kafka/produce-records.ts';
import { kafkaClients } from '../runtime/base/client-supplier.ts';
import { readRecordSizeLimits } from '../runtime/base/record-limits.ts';
import { addClientOptions } from './client-options.ts';
import { connect, type ConnectionFlags } from './connection.ts';
import { intAtLeast } from './int-option.ts';
import { checkRecordSizes, type NumberedRecord } from './produce-limits.ts';
import { lineEncoder, ProduceInputError, type ProduceFormat } from './record-format.ts';
import { formatOfSchemaFile, REGISTRY_FORMATS } from './registry-formats.ts';

interface ProduceOptions extends ConnectionFlags {
  format?: ProduceFormat;
  schema?: string;
  message?: string;
  keyField?: string;
  keyed?: boolean;
  maxMessageBytes?: number;
}

function readInput(file: string | undefined): string {
  try {
    return readFileSync(file ?? 0, 'utf8');
  } catch (e) {
    throw new ProduceInputError(`cannot read ${file ?? 'stdin'}: ${(e as NodeJS.ErrnoException).code ?? (e as Error).message}`);
  }
}

export function registerProduce(program: Command): void {
  addClientOptions(defineCommand(program, 'produce')
    .addOption(new Option('--format <format>', 'json: each line a JSON value; text: each line as it is; avro, protobuf, json-schema: a JSON line encoded with --schema in the Confluent wire format').choices(['json', 'text', ...REGISTRY_FORMATS]))
    .option('--schema <file>', 'value schema, registered under <topic>-value; .avsc, .proto or .json implies --format avro, protobuf or json-schema')
    .option('--message <name>', 'the Protobuf message of the values (default: the first in --schema)')
    .option('--key-field <field>', 'the key is this field of each value')
    .option('--keyed', 'each line is {"key": ..., "value": ..., "headers": {...}}')
    .option('--max-message-bytes <n>', "the producer's message.max.bytes: the largest record it sends (default 1000000; the topic's max.message.bytes still applies)", intAtLeast(1000)),
    { registryHelp: 'schema registry (env ONCEFLOW_REGISTRY_URL; default: the `dev up` registry)' },
  )
    .action(async (topic: string, file: string | undefined, opts: ProduceOptions) => {
      const connection = await connect(opts);
      const { clientOptions } = connection;
      // librdkafka would otherwise wait out message.timeout.ms on a topic that does not exist.
      await withAdmin(connection.bootstrap, (admin) => requireTopics(admin, { output: [topic] }, clientOptions), clientOptions);
      const format = opts.format ?? (opts.schema ? (formatOfSchemaFile(opts.schema) ?? 'avro') : 'json');
      const encode = await lineEncoder({
        topic,
        format,
        keyed: opts.keyed === true,
        ...(opts.keyField !== undefined ? { keyField: opts.keyField } : {}),
        ...(opts.schema !== undefined ? { schema: opts.schema } : {}),
        ...(opts.message !== undefined ? { messageName: opts.message } : {}),
        ...(connection.registryUrl !== undefined ? { registryUrl: connection.registryUrl } : {}),
      });
      // Every line is encoded and measured before the first is sent: a bad line 900 must not leave 899 records behind.
      const records: NumberedRecord[] = readInput(file)
        .split('\n')
        .map((line, i) => ({ line: line.trim(), lineNumber: i + 1 }))
        .filter((l) => l.line !== '')
        .map((l) => ({ lineNumber: l.lineNumber, record: encode(l.line, l.lineNumber) }));
      const producerOptions: ClientOptions = opts.maxMessageBytes === undefined ? clientOptions : { ...clientOptions, 'message.max.bytes': opts.maxMessageBytes };
      const { limits, unknown } = await readRecordSizeLimits(kafkaClients, connection.bootstrap, [topic], producerOptions);
      if (unknown !== undefined) console.error(`onceflow: warning: the topic's max.message.bytes is not known (${unknown}); only the producer's limit was checked`);
      checkRecordSizes(topic, records, limits);
      const maxRecordBytes = limits.maxRecordBytes(topic);
      // Several records each under a topic's limit must not make a batch over it.
      const batchSize: ClientOptions = maxRecordBytes < DEFAULT_BATCH_SIZE ? { 'batch.size': maxRecordBytes } : {};
      const count = await produceInOneTransaction(connection.bootstrap, topic, records.map((r) => r.record), { ...producerOptions, ...batchSize });
      console.log(`produced ${count} record(s) to ${topic}`);
    });
}
