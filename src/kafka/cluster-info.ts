import { existsSync, readFileSync, writeFileSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';
import type { SecureClusterInfo } from './security.ts';

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

const DEV_DIR = '.onceflow';

/**
 * The dev cluster's directory for a command run in `cwd`: ONCEFLOW_HOME; else the nearest `.onceflow/`
 * holding a dev.json, looking from `cwd` upward (so a command run anywhere in the project finds the
 * cluster `dev up` started at its top); else `.onceflow/` beside the nearest package.json, else in `cwd`.
 */
export function defaultClusterDir(cwd = process.cwd(), env: NodeJS.ProcessEnv = process.env): string {
  if (env.ONCEFLOW_HOME) return resolve(env.ONCEFLOW_HOME);
  const start = resolve(cwd);
  return join(nearestAbove(start, (dir) => existsSync(join(dir, DEV_DIR, 'dev.json'))) ?? nearestAbove(start, (dir) => existsSync(join(dir, 'package.json'))) ?? start, DEV_DIR);
}

function nearestAbove(start: string, holds: (dir: string) => boolean): string | undefined {
  for (let dir = start; ; dir = dirname(dir)) {
    if (holds(dir)) return dir;
    if (dirname(dir) === dir) return undefined;
  }
}
const infoFile = (dir: string): string => join(dir, 'dev.json');

export function readClusterInfo(dir = defaultClusterDir()): LocalClusterInfo | undefined {
  const file = infoFile(dir);
  if (!existsSync(file)) return undefined;
  return JSON.parse(readFileSync(file, 'utf8')) as LocalClusterInfo;
}

export function writeClusterInfo(info: LocalClusterInfo): void {
  writeFileSync(infoFile(info.dir), JSON.stringify(info, null, 2));
}
