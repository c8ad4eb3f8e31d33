import type { Command } from 'commander';
import { defineCommand } from './commands.ts';
import { readFileSync } from 'node:fs';
import { parseAcls } from '../kafka/acls.ts';
import { BrokerCluster, BrokerCountError } from '../kafka/broker-cluster.ts';
import { intAtLeast } from './int-option.ts';
import { startLocalCluster, stopLocalCluster } from '../kafka/local-cluster.ts';
import { defaultClusterDir, readClusterInfo, type LocalClusterInfo } from '../kafka/cluster-info.ts';
import { isAlive } from '../kafka/processes.ts';
import { LocalClusterError } from '../kafka/errors.ts';
import { applySecurity, newPassword, SCRAM_MECHANISM, type SecureClusterInfo } from '../kafka/security.ts';

function secureClusterIn(dir: string): { info: LocalClusterInfo; secure: SecureClusterInfo } {
  const info = readClusterInfo(dir);
  if (!info?.secure) throw new LocalClusterError('NOT_RUNNING', `no secure dev cluster in ${dir}: start one with \`onceflow dev up --secure\``);
  return { info, secure: info.secure };
}

/** The cluster's addresses as the environment variables every command reads; no registry line when none was started. */
function printConnectionEnv(info: Pick<LocalClusterInfo, 'bootstrap' | 'registryUrl'>): void {
  console.log(`ONCEFLOW_BOOTSTRAP=${info.bootstrap}`);
  if (info.registryUrl) console.log(`ONCEFLOW_REGISTRY_URL=${info.registryUrl}`);
}

/** The client settings of a secure cluster, as worker environment variables (the password stays in its file). */
function printSecureSettings(secure: SecureClusterInfo): void {
  console.log('ONCEFLOW_KAFKA_SECURITY_PROTOCOL=SASL_SSL');
  console.log(`ONCEFLOW_KAFKA_SASL_MECHANISMS=${SCRAM_MECHANISM}`);
  console.log(`ONCEFLOW_KAFKA_SSL_CA_LOCATION=${secure.caLocation}`);
  console.log(`admin user ${secure.adminUser}, password in ${secure.adminPasswordFile}, Java client config ${secure.adminCommandConfig}`);
}

export function registerDev(program: Command): void {
  const dev = defineCommand(program, 'dev');
  dev
    .command('up')
    .description('start the broker and the registry, wait until both answer, print where they are')
    .option('--dir <dir>', 'state directory', defaultClusterDir())
    .option('--no-registry', 'start the broker only')
    .option('--secure', 'SASL_SSL listener: TLS (a CA made now), SCRAM-SHA-512 users, ACLs enforced by the StandardAuthorizer')
    .option('--fresh', 'stop what runs and start an empty cluster (default: keep the earlier data and ports)')
    .option('--brokers <n>', 'KRaft nodes (broker+controller each); 3: replication factor 3, min.insync.replicas 2, internal topics too', intAtLeast(1), 1)
    .action(async (opts: { dir: string; registry: boolean; secure?: boolean; fresh?: boolean; brokers: number }) => {
      const before = opts.fresh ? undefined : readClusterInfo(opts.dir);
      if (opts.brokers > 1) {
        if (opts.secure) throw new BrokerCountError('--secure runs one broker: --brokers applies to the plaintext cluster only');
        const cluster = await BrokerCluster.start({ dir: opts.dir, brokers: opts.brokers, withRegistry: opts.registry, fresh: opts.fresh === true });
        const info = cluster.info;
        for (const node of cluster.nodes) {
          const kept = before?.brokers?.some((b) => b.nodeId === node.nodeId && b.pid === node.pid) === true;
          console.log(`node ${node.nodeId}: 127.0.0.1:${node.advertisedPort} (pid ${node.pid}${kept ? ', already running' : `, answered after ${node.startMs} ms`}; replication listener ${node.internalPort}, controller ${node.controllerPort})`);
        }
        if (info.registryUrl) console.log(`registry ${info.registryUrl} (pid ${info.registryPid})`);
        printConnectionEnv(info);
        console.log(`(written to ${opts.dir}/dev.json)`);
        return;
      }
      if (before?.brokers && !opts.fresh) throw new BrokerCountError(`${opts.dir} holds a ${before.brokers.length}-broker cluster: give --brokers ${before.brokers.length}, or --fresh for a single broker`);
      const info = await startLocalCluster({ dir: opts.dir, withRegistry: opts.registry, secure: opts.secure === true, fresh: opts.fresh === true });
      const reused = before !== undefined && before.brokerPid === info.brokerPid;
      const registryReused = before !== undefined && before.registryPid === info.registryPid;
      const how = reused ? 'already running' : before !== undefined ? `started again on its data in ${info.dir}` : 'started';
      console.log(`${how}: broker ${info.bootstrap} (pid ${info.brokerPid}${reused ? '' : `, answered after ${info.brokerStartMs} ms`})`);
      if (info.registryUrl) console.log(`registry ${info.registryUrl} (pid ${info.registryPid}${registryReused ? ', already running' : `, answered after ${info.registryStartMs} ms`})`);
      printConnectionEnv(info);
      if (info.secure) printSecureSettings(info.secure);
      console.log(`(written to ${opts.dir}/dev.json)`);
    });
  dev
    .command('down')
    .description('stop exactly the processes `dev up` started')
    .option('--dir <dir>', 'state directory', defaultClusterDir())
    .action(async (opts: { dir: string }) => {
      const info = await stopLocalCluster(opts.dir);
      const brokerPids = info?.brokers ? info.brokers.map((b) => b.pid).filter((pid) => pid > 0) : info && info.brokerPid > 0 ? [info.brokerPid] : [];
      const ran = info !== undefined && (brokerPids.length > 0 || info.registryPid > 0);
      console.log(ran ? `stopped broker pid${brokerPids.length > 1 ? 's' : ''} ${brokerPids.join(', ')}${info.registryPid ? ` and registry pid ${info.registryPid}` : ''}` : 'nothing was running');
    });
  dev
    .command('status')
    .description('say whether the local broker and registry run')
    .option('--dir <dir>', 'state directory', defaultClusterDir())
    .action((opts: { dir: string }) => {
      const info = readClusterInfo(opts.dir);
      if (!info || (info.brokerPid <= 0 && info.registryPid <= 0)) {
        console.log(info ? `not running (stopped; \`onceflow dev up${info.brokers ? ` --brokers ${info.brokers.length}` : ''}\` starts ${info.bootstrap} again on its data)` : 'not running');
        process.exitCode = 1;
        return;
      }
      const nodes = info.brokers ?? [{ nodeId: 1, pid: info.brokerPid, advertisedPort: info.brokerPort }];
      const broker = nodes.every((n) => isAlive(n.pid));
      const registry = info.registryPid > 0 && isAlive(info.registryPid);
      if (info.brokers) for (const n of nodes) console.log(`broker ${n.nodeId} 127.0.0.1:${n.advertisedPort}  pid ${n.pid}  ${isAlive(n.pid) ? 'running' : 'NOT running'}`);
      else console.log(`broker   ${info.bootstrap}  pid ${info.brokerPid}  ${broker ? 'running' : 'NOT running'}`);
      if (info.registryPid > 0) console.log(`registry ${info.registryUrl}  pid ${info.registryPid}  ${registry ? 'running' : 'NOT running'}`);
      if (info.secure) printSecureSettings(info.secure);
      if (!broker || (info.registryPid > 0 && !registry)) process.exitCode = 1;
    });
  dev
    .command('user <name>')
    .description('create or update a SCRAM-SHA-512 user on the secure dev cluster (password from ONCEFLOW_USER_PASSWORD, else generated and printed)')
    .option('--dir <dir>', 'state directory', defaultClusterDir())
    .action(async (name: string, opts: { dir: string }) => {
      const { info, secure } = secureClusterIn(opts.dir);
      const given = process.env.ONCEFLOW_USER_PASSWORD;
      const password = given ?? newPassword();
      await applySecurity(info.bootstrap, secure, { users: [{ name, password }] });
      console.log(`user ${name} (principal User:${name}) ${given ? 'set to ONCEFLOW_USER_PASSWORD' : `has password ${password}`}`);
    });
  dev
    .command('grant [file]')
    .description('add the ACLs of a file (or stdin) in the format `onceflow acls` prints to the secure dev cluster')
    .option('--dir <dir>', 'state directory', defaultClusterDir())
    .action(async (file: string | undefined, opts: { dir: string }) => {
      const { info, secure } = secureClusterIn(opts.dir);
      const acls = parseAcls(readFileSync(file ?? 0, 'utf8'));
      await applySecurity(info.bootstrap, secure, { acls });
      console.log(`added ${acls.length} ACL(s)`);
    });
}
