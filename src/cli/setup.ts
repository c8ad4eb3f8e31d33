import type { Command } from 'commander';
import { assertJava } from '../kafka/java.ts';
import { ensureKafkaJars, ensureRegistryJars, jarCacheDir } from '../kafka/jars.ts';

export function registerSetup(program: Command): void {
  program
    .command('setup')
    .description('fetch the local Kafka and schema registry jars with Maven into the cache now (`dev up`, `demo` and `chaos` do it on first use); ONCEFLOW_CACHE moves the cache')
    .option('--no-registry', 'the broker jars only')
    .action(async (opts: { registry: boolean }) => {
      assertJava();
      const log = (line: string): void => console.log(line);
      console.log(`Kafka jars: ${await ensureKafkaJars(log)}`);
      if (opts.registry) console.log(`schema registry: ${await ensureRegistryJars(log)}`);
      console.log(`(cache ${jarCacheDir()})`);
    });
}
