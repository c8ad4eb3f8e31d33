import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { LocalClusterError } from './errors.ts';
import { projectRoot } from './paths.ts';

// Apart from broker-process.ts so that security.ts can run Kafka's Java admin without importing the
// module that imports it.

const cacheDir = (): string => process.env.ONCEFLOW_CACHE ?? join(projectRoot(), '.cache');

export function kafkaClasspath(): string {
  const libs = join(cacheDir(), 'kafka', 'libs');
  if (!existsSync(libs)) {
    throw new LocalClusterError('CACHE_MISSING', `Kafka jars are missing under ${libs}: run \`npm run setup\` first`);
  }
  return `${libs}/*`;
}

export function apicurioJar(): string {
  const jar = join(cacheDir(), 'apicurio', 'quarkus-run.jar');
  if (!existsSync(jar)) {
    throw new LocalClusterError('CACHE_MISSING', `Apicurio Registry is missing at ${jar}: run \`npm run setup\` first`);
  }
  return jar;
}
