import { spawnSync } from 'node:child_process';
import { existsSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { pingBroker, type ClientOptions } from './admin.ts';
import { LocalClusterError } from './errors.ts';
import { kafkaClasspath } from './jars.ts';
import { adminClientOptions, formatScramArgs, type BrokerSecurity, type SecureClusterInfo } from './security.ts';
import { brokerProperties, log4jConfig, newClusterId, type ClusterNodeSettings } from './broker-config.ts';
import { spawnDetached, waitFor } from './processes.ts';

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
