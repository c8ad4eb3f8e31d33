import { spawn, spawnSync } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { closeSync, existsSync, mkdirSync, openSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:net';
import { join, resolve } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { projectRoot } from './paths.ts';
import { pingBroker, type ClientOptions } from './admin.ts';
import { LocalClusterError } from './errors.ts';
import { apicurioJar, kafkaClasspath } from './jars.ts';
import { adminClientOptions, formatScramArgs, makeBrokerSecurity, secureListenerProperties, type BrokerSecurity, type SecureClusterInfo } from './security.ts';

// Re-exported: callers of the cluster functions catch it from here; it lives apart so that jars.ts can throw it too.
export { LocalClusterError };

/** What `dev up` leaves behind for the other commands and the tests to find. */
export interface LocalClusterInfo {
  readonly bootstrap: string;
  readonly registryUrl: string;
  readonly brokerPid: number;
  readonly registryPid: number;
  readonly dir: string;
  readonly brokerLog: string;
  readonly registryLog: string;
  readonly brokerStartMs: number;
  readonly registryStartMs: number;
  readonly brokerPort: number;
  readonly controllerPort: number;
  /** Set by `dev up --secure`: the broker listens SASL_SSL (SCRAM) with ACLs enforced. */
  readonly secure?: SecureClusterInfo;
  /** Set by `dev up --brokers N` (N > 1): every node; `brokerPid` and `brokerPort` are the first one's. */
  readonly brokers?: readonly ClusterNodeInfo[];
  readonly clusterId?: string;
}

/** One node of a multi-broker dev cluster, as dev.json records it. */
export interface ClusterNodeInfo {
  readonly nodeId: number;
  readonly pid: number;
  /** The broker's own client listener. */
  readonly clientPort: number;
  /** The port clients are told to use: a fault proxy's, or clientPort. */
  readonly advertisedPort: number;
  readonly internalPort: number;
  readonly controllerPort: number;
  readonly dir: string;
  readonly log: string;
  readonly startMs: number;
}

export interface StartOptions {
  /** Where logs, data and the info file go. Default: `<project>/.onceflow`. */
  readonly dir?: string;
  readonly brokerPort?: number;
  readonly registryPort?: number;
  readonly withRegistry?: boolean;
  /** TLS with a CA made at start, SASL/SCRAM-SHA-512, and the StandardAuthorizer with an `admin` super user. */
  readonly secure?: boolean;
  /** Stop what runs and wipe the directory: a new, empty cluster. */
  readonly fresh?: boolean;
  readonly log?: (line: string) => void;
}

export const defaultClusterDir = (): string => process.env.ONCEFLOW_HOME ?? join(projectRoot(), '.onceflow');
const infoFile = (dir: string): string => join(dir, 'dev.json');

export async function freePort(): Promise<number> {
  return new Promise((res, rej) => {
    const server = createServer();
    server.once('error', rej);
    server.listen(0, '127.0.0.1', () => {
      const address = server.address();
      const port = typeof address === 'object' && address ? address.port : 0;
      server.close(() => res(port));
    });
  });
}

async function assertPortFree(port: number, what: string): Promise<void> {
  await new Promise<void>((res, rej) => {
    const server = createServer();
    server.once('error', () => rej(new LocalClusterError('PORT_TAKEN', `${what} port ${port} on 127.0.0.1 is already in use`)));
    server.listen(port, '127.0.0.1', () => server.close(() => res()));
  });
}

function assertJava(): void {
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

function tail(file: string, lines = 30): string {
  if (!existsSync(file)) return '(no log)';
  return readFileSync(file, 'utf8').split('\n').slice(-lines).join('\n');
}

export function isAlive(pid: number): boolean {
  // 0 is a stopped cluster's record; signalling it would ask about this process's own group.
  if (pid <= 0) return false;
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
}

function log4jConfig(file: string): string {
  return `<?xml version="1.0" encoding="UTF-8"?>
<Configuration status="WARN">
  <Appenders>
    <File name="file" fileName="${file}" append="true">
      <PatternLayout pattern="[%d] %p %m (%c)%n"/>
    </File>
  </Appenders>
  <Loggers>
    <Logger name="kafka" level="INFO"/>
    <Logger name="org.apache.kafka" level="WARN"/>
    <Logger name="state.change.logger" level="WARN"/>
    <Root level="WARN"><AppenderRef ref="file"/></Root>
  </Loggers>
</Configuration>
`;
}

/** A KRaft cluster id: 22 base64url characters, never starting with '-', which the storage tool would read as an option (Kafka's own Uuid avoids it too). */
export function newClusterId(): string {
  for (;;) {
    const id = randomBytes(16).toString('base64url').slice(0, 22);
    if (!id.startsWith('-')) return id;
  }
}

/**
 * One node of a multi-node KRaft cluster (broker-cluster.ts). Clients use the CLIENT listener, which may
 * advertise another port (a fault proxy in front of it); replication uses the INTERNAL listener, never proxied,
 * so that a stalled client connection does not stall the followers too.
 */
export interface ClusterNodeSettings {
  readonly nodeId: number;
  readonly clusterId: string;
  /** `id@host:port` of every controller. */
  readonly quorumVoters: string;
  readonly internalPort: number;
  /** The port clients are told to use (the proxy's); the broker's own port when nothing is in front. */
  readonly advertisedPort: number;
  readonly replicationFactor: number;
  readonly minInsyncReplicas: number;
}

/** Single-node KRaft settings: replication 1 everywhere, small internal topics so start-up stays quick; `node` makes it one node of several. */
export function brokerProperties(opts: { brokerPort: number; controllerPort: number; dataDir: string; security?: BrokerSecurity; node?: ClusterNodeSettings }): string {
  const listener = opts.security ? 'SASL_SSL' : 'PLAINTEXT';
  const node = opts.node;
  const replication = node?.replicationFactor ?? 1;
  const minIsr = node?.minInsyncReplicas ?? 1;
  const listeners = node
    ? [
        `listeners=CLIENT://127.0.0.1:${opts.brokerPort},INTERNAL://127.0.0.1:${node.internalPort},CONTROLLER://127.0.0.1:${opts.controllerPort}`,
        `advertised.listeners=CLIENT://127.0.0.1:${node.advertisedPort},INTERNAL://127.0.0.1:${node.internalPort}`,
        'controller.listener.names=CONTROLLER',
        'inter.broker.listener.name=INTERNAL',
        'listener.security.protocol.map=CLIENT:PLAINTEXT,INTERNAL:PLAINTEXT,CONTROLLER:PLAINTEXT',
      ]
    : [
        `listeners=${listener}://127.0.0.1:${opts.brokerPort},CONTROLLER://127.0.0.1:${opts.controllerPort}`,
        `advertised.listeners=${listener}://127.0.0.1:${opts.brokerPort}`,
        'controller.listener.names=CONTROLLER',
        `inter.broker.listener.name=${listener}`,
        `listener.security.protocol.map=${listener}:${listener},CONTROLLER:PLAINTEXT`,
      ];
  return [
    'process.roles=broker,controller',
    `node.id=${node?.nodeId ?? 1}`,
    `controller.quorum.voters=${node?.quorumVoters ?? `1@127.0.0.1:${opts.controllerPort}`}`,
    ...listeners,
    ...(opts.security ? secureListenerProperties(opts.security) : []),
    `log.dirs=${opts.dataDir}`,
    'num.partitions=1',
    // A typo'd topic must surface as an error, not as a silently created empty topic.
    'auto.create.topics.enable=false',
    `default.replication.factor=${replication}`,
    `min.insync.replicas=${minIsr}`,
    `offsets.topic.replication.factor=${replication}`,
    'offsets.topic.num.partitions=3',
    `transaction.state.log.replication.factor=${replication}`,
    `transaction.state.log.min.isr=${minIsr}`,
    'transaction.state.log.num.partitions=3',
    'group.initial.rebalance.delay.ms=0',
    // Lets tests evict a paused (zombie) member quickly.
    'group.min.session.timeout.ms=1000',
    'log.segment.bytes=67108864',
    // Every few seconds, as a busy production broker may: a record older than its topic's retention is
    // deleted soon after it is written, so a test of old (backfilled) timestamps sees what a user would.
    'log.retention.check.interval.ms=5000',
    'transaction.abort.timed.out.transaction.cleanup.interval.ms=5000',
    '',
  ].join('\n');
}

function spawnDetached(cmd: string, args: string[], logFile: string, cwd: string): number {
  const fd = openSync(logFile, 'a');
  const child = spawn(cmd, args, { cwd, detached: true, stdio: ['ignore', fd, fd] });
  closeSync(fd);
  child.unref();
  if (child.pid === undefined) throw new LocalClusterError('PROCESS_EXITED', `${cmd} did not start`);
  return child.pid;
}

async function waitFor(what: string, pid: number, logFile: string, timeoutMs: number, ready: () => Promise<boolean>): Promise<number> {
  const started = Date.now();
  for (;;) {
    if (!isAlive(pid)) {
      throw new LocalClusterError('PROCESS_EXITED', `${what} exited during start-up. Last lines of ${logFile}:\n${tail(logFile)}`);
    }
    if (await ready().catch(() => false)) return Date.now() - started;
    if (Date.now() - started > timeoutMs) {
      throw new LocalClusterError('START_TIMEOUT', `${what} did not answer within ${timeoutMs} ms. Last lines of ${logFile}:\n${tail(logFile)}`);
    }
    await sleep(250);
  }
}

export interface BrokerHandle {
  readonly pid: number;
  readonly bootstrap: string;
  readonly startMs: number;
}

/**
 * Starts (or restarts, keeping its data) the broker of a cluster directory. A restart of a secure broker
 * passes only `info`: its properties (with the keystore's password) are kept from the first start.
 */
export async function startBroker(dir: string, brokerPort: number, controllerPort: number, security?: { broker?: BrokerSecurity; info: SecureClusterInfo }, node?: ClusterNodeSettings): Promise<BrokerHandle> {
  const dataDir = join(dir, 'kafka-data');
  const propsFile = join(dir, 'server.properties');
  const logFile = join(dir, 'broker.log');
  const classpath = kafkaClasspath();
  const log4j = join(dir, 'log4j2.xml');
  writeFileSync(log4j, log4jConfig(logFile));
  if (!security || security.broker) {
    writeFileSync(propsFile, brokerProperties({ brokerPort, controllerPort, dataDir, ...(security?.broker ? { security: security.broker } : {}), ...(node ? { node } : {}) }), { mode: 0o600 });
  }
  const jvm = ['-Xms256m', '-Xmx1g', '-XX:+UseG1GC', `-Dlog4j2.configurationFile=${log4j}`, '-cp', classpath];
  if (!existsSync(join(dataDir, 'meta.properties'))) {
    // The nodes of one cluster share its id; a single node makes its own.
    const clusterId = node?.clusterId ?? newClusterId();
    const format = spawnSync('java', [...jvm, 'kafka.tools.StorageTool', 'format', '-t', clusterId, '-c', propsFile, ...(security?.broker ? formatScramArgs(security.broker) : [])], { encoding: 'utf8' });
    if (format.status !== 0) {
      throw new LocalClusterError('PROCESS_EXITED', `formatting the broker storage failed:\n${format.stdout}\n${format.stderr}`);
    }
  }
  const pid = spawnDetached('java', [...jvm, 'kafka.Kafka', propsFile], logFile, dir);
  const bootstrap = `127.0.0.1:${brokerPort}`;
  const what = node ? `Kafka broker ${node.nodeId}` : 'the Kafka broker';
  const clientOptions: ClientOptions = security ? adminClientOptions(security.info) : {};
  const startMs = await waitFor(what, pid, logFile, 60_000, () => pingBroker(bootstrap, clientOptions));
  return { pid, bootstrap, startMs };
}

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

export function readClusterInfo(dir = defaultClusterDir()): LocalClusterInfo | undefined {
  const file = infoFile(dir);
  if (!existsSync(file)) return undefined;
  return JSON.parse(readFileSync(file, 'utf8')) as LocalClusterInfo;
}

export function writeClusterInfo(info: LocalClusterInfo): void {
  writeFileSync(infoFile(info.dir), JSON.stringify(info, null, 2));
}

async function isPortFree(port: number): Promise<boolean> {
  return assertPortFree(port, 'a').then(
    () => true,
    () => false,
  );
}

/** The port asked for, else the one used before when it is still free, else any free one. */
async function pickPort(wanted: number | undefined, previous: number | undefined): Promise<number> {
  if (wanted !== undefined) return wanted;
  if (previous !== undefined && previous > 0 && (await isPortFree(previous))) return previous;
  return freePort();
}

const registryPortOf = (info: LocalClusterInfo): number | undefined => (info.registryUrl ? Number(new URL(info.registryUrl).port) : undefined);

/**
 * Starts the broker (and registry) of `dir`, or whichever of them is not running. An earlier cluster's data
 * and ports are kept (a port since taken by another process is replaced): topics survive a crashed broker and
 * a `dev down`, and clients configured with the address reconnect. `fresh` stops what runs and wipes the
 * directory first. A registry still running is kept, never started twice.
 */
export async function startLocalCluster(opts: StartOptions = {}): Promise<LocalClusterInfo> {
  const dir = resolve(opts.dir ?? defaultClusterDir());
  let existing = readClusterInfo(dir);
  const withRegistry = opts.withRegistry ?? true;
  if (opts.fresh && existing) {
    await stopLocalCluster(dir);
    existing = undefined;
  }
  const brokerRuns = existing !== undefined && isAlive(existing.brokerPid);
  const registryRuns = existing !== undefined && isAlive(existing.registryPid);
  if (existing && brokerRuns && (registryRuns || !withRegistry)) return existing;
  assertJava();
  // A secure cluster's keystore and SCRAM users live in its data: it is reused only as what it was.
  const reuse = existing !== undefined && !opts.fresh && (existing.secure !== undefined) === (opts.secure === true);
  if (!reuse) {
    if (existing) await stopLocalCluster(dir);
    rmSync(dir, { recursive: true, force: true });
    existing = undefined;
  }
  mkdirSync(dir, { recursive: true });
  const brokerPort = brokerRuns && existing ? existing.brokerPort : await pickPort(opts.brokerPort, existing?.brokerPort);
  const controllerPort = brokerRuns && existing ? existing.controllerPort : await pickPort(undefined, existing?.controllerPort);
  if (!brokerRuns) await assertPortFree(brokerPort, 'the broker');
  const startRegistryNow = withRegistry && !registryRuns;
  const registryPort = startRegistryNow ? await pickPort(opts.registryPort, existing ? registryPortOf(existing) : undefined) : 0;
  if (startRegistryNow) await assertPortFree(registryPort, 'the registry');
  const registry = startRegistryNow ? startRegistry(dir, registryPort) : Promise.resolve(undefined);
  const security = existing?.secure ? { info: existing.secure } : opts.secure ? makeBrokerSecurity(dir) : undefined;
  const brokerStart = brokerRuns && existing ? Promise.resolve(undefined) : startBroker(dir, brokerPort, controllerPort, security);
  const [broker, reg] = await Promise.allSettled([brokerStart, registry]);
  if (broker.status === 'rejected' || reg.status === 'rejected') {
    if (broker.status === 'fulfilled' && broker.value) killQuietly(broker.value.pid);
    if (reg.status === 'fulfilled' && reg.value) killQuietly(reg.value.pid);
    throw broker.status === 'rejected' ? broker.reason : (reg as PromiseRejectedResult).reason;
  }
  const keptRegistry = registryRuns && existing ? { pid: existing.registryPid, url: existing.registryUrl, startMs: existing.registryStartMs } : undefined;
  const registryNow = reg.value ?? keptRegistry ?? { pid: 0, url: '', startMs: 0 };
  const info: LocalClusterInfo = {
    bootstrap: broker.value?.bootstrap ?? existing!.bootstrap,
    registryUrl: registryNow.url,
    brokerPid: broker.value?.pid ?? existing!.brokerPid,
    registryPid: registryNow.pid,
    dir,
    brokerLog: join(dir, 'broker.log'),
    registryLog: join(dir, 'registry.log'),
    brokerStartMs: broker.value?.startMs ?? existing!.brokerStartMs,
    registryStartMs: registryNow.startMs,
    brokerPort,
    controllerPort,
    ...(security ? { secure: security.info } : {}),
  };
  writeClusterInfo(info);
  return info;
}

export function killQuietly(pid: number, signal: NodeJS.Signals = 'SIGTERM'): void {
  if (pid <= 0) return;
  try {
    // Negative pid: the whole process group the detached child leads.
    process.kill(-pid, signal);
  } catch {
    try {
      process.kill(pid, signal);
    } catch {
      /* already gone */
    }
  }
}

export async function stopProcess(pid: number, graceMs = 15_000): Promise<void> {
  if (pid <= 0 || !isAlive(pid)) return;
  killQuietly(pid, 'SIGTERM');
  const deadline = Date.now() + graceMs;
  while (isAlive(pid) && Date.now() < deadline) await sleep(100);
  if (isAlive(pid)) killQuietly(pid, 'SIGKILL');
  while (isAlive(pid)) await sleep(50);
}

/**
 * Stops exactly the processes recorded in the cluster directory. The record stays, without pids, so that
 * the next start reuses the data and ports, and commands name the stopped cluster instead of none.
 */
export async function stopLocalCluster(dir = defaultClusterDir()): Promise<LocalClusterInfo | undefined> {
  const info = readClusterInfo(dir);
  if (!info) return undefined;
  await Promise.all([stopProcess(info.brokerPid), stopProcess(info.registryPid), ...(info.brokers ?? []).map((node) => stopProcess(node.pid))]);
  writeClusterInfo({ ...info, brokerPid: 0, registryPid: 0, ...(info.brokers ? { brokers: info.brokers.map((node) => ({ ...node, pid: 0 })) } : {}) });
  return info;
}

/** Kills the broker (SIGKILL or SIGTERM) and starts it again on the same ports and data: for chaos runs. */
export async function restartBroker(info: LocalClusterInfo, signal: 'SIGKILL' | 'SIGTERM' = 'SIGTERM'): Promise<LocalClusterInfo> {
  if (signal === 'SIGKILL') killQuietly(info.brokerPid, 'SIGKILL');
  await stopProcess(info.brokerPid);
  const broker = await startBroker(info.dir, info.brokerPort, info.controllerPort, info.secure ? { info: info.secure } : undefined);
  const next = { ...info, brokerPid: broker.pid, brokerStartMs: broker.startMs };
  writeClusterInfo(next);
  return next;
}
