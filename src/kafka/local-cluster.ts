import { mkdirSync, rmSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { makeBrokerSecurity } from './security.ts';
import { defaultClusterDir, readClusterInfo, writeClusterInfo, type LocalClusterInfo } from './cluster-info.ts';
import { assertPortFree, pickPort } from './ports.ts';
import { assertJava } from './java.ts';
import { isAlive, killQuietly, stopProcess } from './processes.ts';
import { startBroker } from './broker-process.ts';
import { startRegistry } from './registry-process.ts';
import { ensureKafkaJars, ensureRegistryJars } from './jars.ts';

export interface StartOptions {
  /** Where logs, data and the info file go. Default: `defaultClusterDir()`. */
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
  // First use: the jars are fetched into the per-user cache before any port is picked.
  if (!brokerRuns) await ensureKafkaJars();
  if (withRegistry && !registryRuns) await ensureRegistryJars();
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
