import type { Command } from 'commander';
import { defaultClusterDir, isAlive, readClusterInfo, startLocalCluster, stopLocalCluster } from '../kafka/local-cluster.ts';

export function registerDev(program: Command): void {
  const dev = program.command('dev').description('a local single-node Kafka (KRaft) and schema registry for development and tests');
  dev
    .command('up')
    .description('start the broker and the registry, wait until both answer, print where they are')
    .option('--dir <dir>', 'state directory', defaultClusterDir())
    .option('--no-registry', 'start the broker only')
    .action(async (opts: { dir: string; registry: boolean }) => {
      const before = readClusterInfo(opts.dir);
      const info = await startLocalCluster({ dir: opts.dir, withRegistry: opts.registry });
      const reused = before !== undefined && before.brokerPid === info.brokerPid;
      console.log(`${reused ? 'already running' : 'started'}: broker ${info.bootstrap} (pid ${info.brokerPid}${reused ? '' : `, answered after ${info.brokerStartMs} ms`})`);
      if (info.registryUrl) console.log(`registry ${info.registryUrl} (pid ${info.registryPid}${reused ? '' : `, answered after ${info.registryStartMs} ms`})`);
      console.log(`ONCEFLOW_BOOTSTRAP=${info.bootstrap}`);
      console.log(`ONCEFLOW_REGISTRY_URL=${info.registryUrl}`);
      console.log(`(written to ${opts.dir}/dev.json)`);
    });
  dev
    .command('down')
    .description('stop exactly the processes `dev up` started')
    .option('--dir <dir>', 'state directory', defaultClusterDir())
    .action(async (opts: { dir: string }) => {
      const info = await stopLocalCluster(opts.dir);
      console.log(info ? `stopped broker pid ${info.brokerPid}${info.registryPid ? ` and registry pid ${info.registryPid}` : ''}` : 'nothing was running');
    });
  dev
    .command('status')
    .description('say whether the local broker and registry run')
    .option('--dir <dir>', 'state directory', defaultClusterDir())
    .action((opts: { dir: string }) => {
      const info = readClusterInfo(opts.dir);
      if (!info) {
        console.log('not running');
        process.exitCode = 1;
        return;
      }
      const broker = isAlive(info.brokerPid);
      const registry = info.registryPid > 0 && isAlive(info.registryPid);
      console.log(`broker   ${info.bootstrap}  pid ${info.brokerPid}  ${broker ? 'running' : 'NOT running'}`);
      if (info.registryPid > 0) console.log(`registry ${info.registryUrl}  pid ${info.registryPid}  ${registry ? 'running' : 'NOT running'}`);
      if (!broker || (info.registryPid > 0 && !registry)) process.exitCode = 1;
    });
}
