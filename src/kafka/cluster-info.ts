import { existsSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { projectRoot } from './paths.ts';
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

export const defaultClusterDir = (): string => process.env.ONCEFLOW_HOME ?? join(projectRoot(), '.onceflow');
const infoFile = (dir: string): string => join(dir, 'dev.json');

export function readClusterInfo(dir = defaultClusterDir()): LocalClusterInfo | undefined {
  const file = infoFile(dir);
  if (!existsSync(file)) return undefined;
  return JSON.parse(readFileSync(file, 'utf8')) as LocalClusterInfo;
}

export function writeClusterInfo(info: LocalClusterInfo): void {
  writeFileSync(infoFile(info.dir), JSON.stringify(info, null, 2));
}
