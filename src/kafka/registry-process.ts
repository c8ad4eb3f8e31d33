import { join } from 'node:path';
import { LocalClusterError } from './errors.ts';
import { apicurioJar } from './jars.ts';
import { registryJava } from './java.ts';
import { freePort } from './ports.ts';
import { spawnDetached, waitFor } from './processes.ts';

export async function startRegistry(dir: string, port: number): Promise<{ pid: number; url: string; startMs: number }> {
  const jar = apicurioJar();
  const logFile = join(dir, 'registry.log');
  const managementPort = await freePort();
  const pid = spawnDetached(
    registryJava(),
    [
      '-Xms128m',
      '-Xmx512m',
      `-Dquarkus.http.port=${port}`,
      '-Dquarkus.http.host=127.0.0.1',
      // Its management interface defaults to 9000, which collides with common local services.
      `-Dquarkus.management.port=${managementPort}`,
      '-Dquarkus.management.host=127.0.0.1',
      '-jar',
      jar,
    ],
    logFile,
    dir,
  );
  const base = `http://127.0.0.1:${port}`;
  const url = `${base}/apis/ccompat/v7`;
  const startMs = await waitFor('the schema registry', pid, logFile, 90_000, async () => (await fetch(`${url}/subjects`)).ok);
  // Apicurio's global compatibility defaults to NONE; Confluent's is BACKWARD, which is what users expect.
  const rule = await fetch(`${base}/apis/registry/v3/admin/rules`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ ruleType: 'COMPATIBILITY', config: 'BACKWARD' }),
  });
  if (!rule.ok && rule.status !== 409) {
    throw new LocalClusterError('PROCESS_EXITED', `could not set the registry's global compatibility: HTTP ${rule.status} ${await rule.text()}`);
  }
  return { pid, url, startMs };
}
