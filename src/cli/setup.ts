import type { Command } from 'commander';
import { defineCommand } from './commands.ts';
import { assertJava } from '../kafka/java.ts';
import { ensureKafkaJars, ensureRegistryJars, jarCacheDir } from '../kafka/jars.ts';

export function registerSetup(program: Command): void {
  defineCommand(program, 'setup')
    .option('--no-registry', 'the broker jars only')
    .action(async (opts: { registry: boolean }) => {
      assertJava();
      const log = (line: string): void => console.log(line);
      console.log(`Kafka jars: ${await ensureKafkaJars(log)}`);
      if (opts.registry) console.log(`schema registry: ${await ensureRegistryJars(log)}`);
      console.log(`(cache ${jarCacheDir()})`);
    });
}
