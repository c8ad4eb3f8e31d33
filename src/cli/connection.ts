import { join } from 'node:path';
import { OnceflowError } from '../errors.ts';
import { requireBroker } from '../kafka/broker-probe.ts';
import type { ClientOptions } from '../kafka/admin.ts';
import { defaultClusterDir, readClusterInfo } from '../kafka/cluster-info.ts';
import { isAlive } from '../kafka/processes.ts';
import type { ConfigOrigin } from './config-sources.ts';

/** No broker address anywhere: not on the command line, not in the environment, no `dev up` cluster. */
export class BootstrapMissingError extends OnceflowError {
  readonly code = 'BOOTSTRAP_MISSING';
}

/** The cluster `onceflow dev up` recorded in `<dir>/dev.json`, whether or not its broker still runs. */
export interface DevConnection {
  readonly bootstrap: string;
  readonly registryUrl?: string;
  readonly file: string;
  readonly brokerPid: number;
}

export function devConnection(dir = defaultClusterDir()): DevConnection | undefined {
  const info = readClusterInfo(dir);
  if (!info) return undefined;
  return { bootstrap: info.bootstrap, ...(info.registryUrl ? { registryUrl: info.registryUrl } : {}), file: join(dir, 'dev.json'), brokerPid: info.brokerPid };
}

export interface Connection {
  readonly bootstrap: string;
  readonly registryUrl: string | undefined;
  /** Where the bootstrap came from, as a user would name it. */
  readonly source: string;
  readonly dev: DevConnection | undefined;
}

export const MISSING_BOOTSTRAP = 'pass --bootstrap <host:port>, set ONCEFLOW_BOOTSTRAP, or start a local broker with `onceflow dev up`';

/** Flag, then environment, then the cluster `onceflow dev up` started. */
export function resolveConnection(flags: { readonly bootstrap?: string | undefined; readonly registryUrl?: string | undefined }, env: NodeJS.ProcessEnv = process.env): Connection {
  const dev = devConnection();
  const registryUrl = flags.registryUrl ?? (env.ONCEFLOW_REGISTRY_URL || undefined) ?? dev?.registryUrl;
  if (flags.bootstrap) return { bootstrap: flags.bootstrap, registryUrl, source: '--bootstrap', dev };
  if (env.ONCEFLOW_BOOTSTRAP) return { bootstrap: env.ONCEFLOW_BOOTSTRAP, registryUrl, source: 'ONCEFLOW_BOOTSTRAP', dev };
  if (dev) return { bootstrap: dev.bootstrap, registryUrl, source: dev.file, dev };
  throw new BootstrapMissingError(`no Kafka broker to connect to: ${MISSING_BOOTSTRAP}`);
}

/** How a user would name the config layer that set the bootstrap. */
export function bootstrapSource(origin: ConfigOrigin | undefined, dev: DevConnection | undefined): string {
  switch (origin) {
    case 'flag':
      return '--bootstrap';
    case 'env':
      return 'ONCEFLOW_BOOTSTRAP';
    case 'file':
      return 'the config file';
    case 'dev':
      return dev?.file ?? 'the dev cluster';
    default:
      return 'the defaults';
  }
}

/** Fails with BROKER_UNREACHABLE within about 10 s unless a broker answers at the connection's address. */
export async function requireReachable(connection: Pick<Connection, 'bootstrap' | 'source' | 'dev'>, clientOptions: ClientOptions = {}): Promise<void> {
  const dev = connection.dev;
  const devBroker = dev !== undefined && dev.bootstrap === connection.bootstrap;
  const hint = devBroker && !isAlive(dev.brokerPid)
    ? 'The broker `onceflow dev up` started is not running: `onceflow dev up` starts it again on its data.'
    : devBroker
      ? undefined
      : 'For a local one: `onceflow dev up`.';
  await requireBroker(connection.bootstrap, { clientOptions, source: connection.source, ...(hint ? { hint } : {}) });
}

/** Resolves the connection and checks that its broker answers: the start of every command that talks to Kafka. */
export async function connect(flags: { readonly bootstrap?: string | undefined; readonly registryUrl?: string | undefined }, clientOptions: ClientOptions = {}): Promise<Connection> {
  const connection = resolveConnection(flags);
  await requireReachable(connection, clientOptions);
  return connection;
}
