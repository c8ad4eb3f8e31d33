import { spawn } from 'node:child_process';
import { existsSync, mkdirSync, renameSync, rmSync, writeFileSync } from 'node:fs';
import { homedir } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { LocalClusterError } from './errors.ts';

// Apart from broker-process.ts so that security.ts can run Kafka's Java admin without importing the
// module that imports it.

export const APICURIO_VERSION = '3.3.3';

/** Where the local Kafka's and the registry's jars are kept: ONCEFLOW_CACHE, else the per-user cache. */
export function jarCacheDir(env: NodeJS.ProcessEnv = process.env): string {
  if (env.ONCEFLOW_CACHE) return resolve(env.ONCEFLOW_CACHE);
  return join(env.XDG_CACHE_HOME || join(homedir(), '.cache'), 'onceflow');
}

const kafkaLibs = (): string => join(jarCacheDir(), 'kafka', 'libs');
const apicurioDir = (): string => join(jarCacheDir(), 'apicurio');
// The markers say a fetch finished; their names are those scripts/setup.sh wrote, so its caches stay valid.
const KAFKA_MARKER = '.complete';
const APICURIO_MARKER = `.complete-${APICURIO_VERSION}`;

const SETUP_HINT = 'run `onceflow setup` (it fetches them with Maven), or set ONCEFLOW_CACHE to a directory that holds them';

export function kafkaClasspath(): string {
  const libs = kafkaLibs();
  if (!existsSync(join(libs, KAFKA_MARKER))) throw new LocalClusterError('CACHE_MISSING', `Kafka jars are missing under ${libs}: ${SETUP_HINT}`);
  return `${libs}/*`;
}

export function apicurioJar(): string {
  const jar = join(apicurioDir(), 'quarkus-run.jar');
  if (!existsSync(join(apicurioDir(), APICURIO_MARKER))) throw new LocalClusterError('CACHE_MISSING', `Apicurio Registry ${APICURIO_VERSION} is missing at ${jar}: ${SETUP_HINT}`);
  return jar;
}

export type FetchLog = (line: string) => void;
const toStderr: FetchLog = (line) => process.stderr.write(`${line}\n`);

/** Fetches Apache Kafka's jars (the list in broker-jars.pom.xml) into the cache unless they are there. */
export async function ensureKafkaJars(log: FetchLog = toStderr): Promise<string> {
  const pom = fileURLToPath(new URL('./broker-jars.pom.xml', import.meta.url));
  await fetchOnce(kafkaLibs(), KAFKA_MARKER, 'Apache Kafka jars', log, async (staging) => {
    await runTool('mvn', ['-q', '-B', '-f', pom, 'dependency:copy-dependencies', '-DincludeScope=runtime', `-DoutputDirectory=${staging}`], staging);
  });
  return kafkaLibs();
}

/** Fetches Apicurio Registry (its Quarkus app, unpacked) into the cache unless it is there. */
export async function ensureRegistryJars(log: FetchLog = toStderr): Promise<string> {
  const archive = `apicurio-registry-app-${APICURIO_VERSION}-all.tar.gz`;
  await fetchOnce(apicurioDir(), APICURIO_MARKER, `Apicurio Registry ${APICURIO_VERSION}`, log, async (staging) => {
    await runTool('mvn', ['-q', '-B', 'dependency:copy', `-Dartifact=io.apicurio:apicurio-registry-app:${APICURIO_VERSION}:tar.gz:all`, `-DoutputDirectory=${staging}`], staging);
    await runTool('tar', ['-xzf', archive], staging);
    rmSync(join(staging, archive));
  });
  return apicurioDir();
}

/**
 * Fills `target` through a staging directory renamed into place at the end, so that an interrupted fetch
 * leaves nothing that looks complete and two processes fetching at once do not mix their files.
 */
async function fetchOnce(target: string, marker: string, what: string, log: FetchLog, fill: (staging: string) => Promise<void>): Promise<void> {
  if (existsSync(join(target, marker))) return;
  const staging = `${target}.partial-${process.pid}`;
  rmSync(staging, { recursive: true, force: true });
  mkdirSync(staging, { recursive: true });
  const started = Date.now();
  log(`fetching ${what} with Maven into ${target} (first use only)`);
  try {
    await fill(staging);
    writeFileSync(join(staging, marker), '');
    if (existsSync(join(target, marker))) return; // another process finished first
    rmSync(target, { recursive: true, force: true });
    mkdirSync(dirname(target), { recursive: true });
    renameSync(staging, target);
  } finally {
    rmSync(staging, { recursive: true, force: true });
  }
  log(`fetched ${what} in ${((Date.now() - started) / 1000).toFixed(1)} s`);
}

/** Runs Maven or tar in `cwd` (so that no pom.xml of the user's is picked up); a failure carries the tool's last lines. */
function runTool(command: string, args: readonly string[], cwd: string): Promise<void> {
  return new Promise((resolvePromise, reject) => {
    const child = spawn(command, args, { cwd, stdio: ['ignore', 'pipe', 'pipe'] });
    let output = '';
    const keep = (chunk: Buffer): void => {
      output = (output + chunk.toString()).slice(-4000);
    };
    child.stdout.on('data', keep);
    child.stderr.on('data', keep);
    child.once('error', (e: NodeJS.ErrnoException) => {
      reject(
        e.code === 'ENOENT'
          ? new LocalClusterError('TOOL_NOT_FOUND', `${command} is not on PATH: ${command === 'mvn' ? 'Maven fetches the local Kafka and registry jars from Maven Central (Debian: apt-get install maven)' : 'it unpacks the registry'}; or set ONCEFLOW_CACHE to a directory that already holds them`)
          : e,
      );
    });
    child.once('exit', (code) => {
      if (code === 0) resolvePromise();
      else reject(new LocalClusterError('FETCH_FAILED', `${command} ${args.join(' ')} exited ${code}:\n${output.replace(/\x1b\[[0-9;]*m/g, '').trim()}`));
    });
  });
}
