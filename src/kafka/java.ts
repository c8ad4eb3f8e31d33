import { spawnSync } from 'node:child_process';
import { existsSync, readdirSync } from 'node:fs';
import { join } from 'node:path';
import { LocalClusterError } from './errors.ts';

export function assertJava(): void {
  const probe = spawnSync('java', ['-version'], { encoding: 'utf8' });
  if (probe.error || probe.status !== 0) {
    throw new LocalClusterError('JAVA_NOT_FOUND', 'java was not found on PATH: onceflow runs the local Kafka and registry on a JVM (Java 17+)');
  }
}

/** Apicurio 3.3 is built for Java 21+: pick such a JVM (the machine's default may be 17). */
export function registryJava(): string {
  const explicit = process.env.ONCEFLOW_REGISTRY_JAVA;
  if (explicit) return explicit;
  const candidates = ['/usr/lib/jvm', '/opt/java', '/usr/local/lib/jvm']
    .filter((d) => existsSync(d))
    .flatMap((d) => readdirSync(d).map((name) => join(d, name, 'bin', 'java')))
    .filter((bin) => existsSync(bin));
  let best: { bin: string; major: number } | undefined;
  for (const bin of ['java', ...candidates]) {
    const probe = spawnSync(bin, ['-XshowSettings:properties', '-version'], { encoding: 'utf8' });
    const match = /java\.specification\.version = (\d+)/.exec(probe.stderr ?? '');
    const major = match ? Number(match[1]) : 0;
    if (major >= 21 && (!best || major > best.major)) best = { bin, major };
  }
  if (!best) {
    throw new LocalClusterError('JAVA_NOT_FOUND', 'the schema registry (Apicurio 3.3) needs Java 21 or newer; none was found under /usr/lib/jvm (set ONCEFLOW_REGISTRY_JAVA to its java binary)');
  }
  return best.bin;
}
