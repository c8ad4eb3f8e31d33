import type { Command } from 'commander';

/** Repeated `--kafka key=value`, kept as given: config-sources.ts parses them, as it does for `run`. */
export const collectKafkaOption = (value: string, previous: string[] = []): string[] => [...previous, value];

export const KAFKA_OPTION_HELP = 'librdkafka option for every client, repeatable, e.g. security.protocol=SASL_SSL (env ONCEFLOW_KAFKA_<NAME>; default: a `dev up --secure` cluster\'s TLS and SASL settings)';

/**
 * The connection options of a data tool (`topics`, `produce`, `consume`): where the cluster is and how
 * to speak to it, the same sources `run` reads (connection.ts resolveConnection).
 */
export function addClientOptions(command: Command, options: { readonly registryHelp?: string } = {}): Command {
  command.option('--bootstrap <servers>', 'Kafka bootstrap servers (env ONCEFLOW_BOOTSTRAP; default: the `dev up` cluster)');
  command.option('--kafka <key=value>', KAFKA_OPTION_HELP, collectKafkaOption);
  if (options.registryHelp !== undefined) command.option('--registry-url <url>', options.registryHelp);
  return command;
}
