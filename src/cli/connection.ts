import { join } from 'node:path';
import { OnceflowError } from '../errors.ts';
import { requireBroker } from '../kafka/broker-probe.ts';
import type { ClientOptions } from '../kafka/admin.ts';
import { defaultClusterDir, readClusterInfo } from '../kafka/cluster-info.ts';
import { isAlive } from '../kafka/processes.ts';
import { adminClientOptions } from '../kafka/security.ts';
import { resolveConfigSources, type ConfigOrigin } from './config-sources.ts';

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
  /** A `--secure` cluster's TLS and SCRAM settings, as its admin user (the password read from its 0600 file). */
  readonly clientOptions?: ClientOptions;
}

export function devConnection(dir = defaultClusterDir()): DevConnection | undefined {
  const info = readClusterInfo(dir);
  if (!info) return undefined;
  return {
    bootstrap: info.bootstrap,
    ...(info.registryUrl ? { registryUrl: info.registryUrl } : {}),
    file: join(dir, 'dev.json'),
    brokerPid: info.brokerPid,
    ...(info.secure ? { clientOptions: adminClientOptions(info.secure) } : {}),
  };
}

export interface Connection {
  readonly bootstrap: string;
  readonly registryUrl: string | undefined;
  /** Where the bootstrap came from, as a user would name it. */
  readonly source: string;
  readonly dev: DevConnection | undefined;
  /** librdkafka options for every client the command makes: `--kafka`, ONCEFLOW_KAFKA_*, a secure dev cluster's. */
  readonly clientOptions: ClientOptions;
}

/** What a data tool takes on its command line; `kafka` as repeated `key=value`. */
export interface ConnectionFlags {
  readonly bootstrap?: string | undefined;
  readonly registryUrl?: string | undefined;
  readonly kafka?: readonly string[] | undefined;
}

export const MISSING_BOOTSTRAP = 'pass --bootstrap <host:port>, set ONCEFLOW_BOOTSTRAP, or start a local broker with `onceflow dev up`';

/**
 * Flag, then environment, then the cluster `onceflow dev up` started: the same resolution `run` makes
 * (config-sources.ts), so a data tool reaches a cluster exactly as a worker given the same flags would.
 */
export function resolveConnection(flags: ConnectionFlags, env: NodeJS.ProcessEnv = process.env): Connection {
  const dev = devConnection();
  const { input, origin } = resolveConfigSources({
    env,
    flags: { ...(flags.bootstrap ? { bootstrap: flags.bootstrap } : {}), ...(flags.registryUrl ? { registryUrl: flags.registryUrl } : {}), ...(flags.kafka ? { kafka: flags.kafka } : {}) },
    ...(dev ? { devCluster: dev } : {}),
  });
  if (!input.bootstrap) throw new BootstrapMissingError(`no Kafka broker to connect to: ${MISSING_BOOTSTRAP}`);
  return { bootstrap: input.bootstrap, registryUrl: input.registryUrl || undefined, source: bootstrapSource(origin.bootstrap, dev), dev, clientOptions: input.kafka ?? {} };
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
  const protocolHint = devBroker && dev.clientOptions ? `This is the \`dev up --secure\` cluster: given no bootstrap, commands use its settings from ${dev.file}; \`onceflow dev status\` prints them.` : undefined;
  await requireBroker(connection.bootstrap, { clientOptions, source: connection.source, ...(hint ? { hint } : {}), ...(protocolHint ? { protocolHint } : {}) });
}

/** Resolves the connection and checks that its broker answers: the start of every command that talks to Kafka. */
export async function connect(flags: ConnectionFlags): Promise<Connection> {
  const connection = resolveConnection(flags);
  await requireReachable(connection, connection.clientOptions);
  return connection;
}
