import { join } from 'node:path';
import { BrokerCluster } from '../../kafka/broker-cluster.ts';
import { restartBroker, startLocalCluster, stopLocalCluster } from '../../kafka/local-cluster.ts';
import { defaultClusterDir, readClusterInfo, type LocalClusterInfo } from '../../kafka/cluster-info.ts';
import type { FaultProxy } from '../../kafka/fault-proxy.ts';
import { brokerCount, type ChaosOptions } from './options.ts';

/**
 * The Kafka cluster under a chaos run: a given one (a running multi-broker cluster, or a broker by its
 * bootstrap), or one started for the run and stopped after it; single broker or several behind fault proxies.
 */
export class ChaosCluster {
  private constructor(
    readonly bootstrap: string,
    /** The single broker's cluster as recorded on disk (none when only its bootstrap is known); a restart renews it. */
    private single: LocalClusterInfo | undefined,
    private readonly brokerCluster: BrokerCluster | undefined,
    /** Whether the run started it, and so stops it. */
    private readonly own: boolean,
  ) {}

  static async start(opts: ChaosOptions, withRegistry: boolean, log: (line: string) => void): Promise<ChaosCluster> {
    const brokers = brokerCount(opts);
    const dir = join(defaultClusterDir(), `chaos-${process.pid}`);
    if (opts.cluster) return new ChaosCluster(opts.cluster.bootstrap, undefined, opts.cluster, false);
    if (brokers > 1) {
      const started = await BrokerCluster.start({ dir, brokers, proxies: true, withRegistry, fresh: true });
      log(`local ${brokers}-broker cluster ${started.bootstrap} (answered after ${started.info.brokerStartMs} ms)`);
      return new ChaosCluster(started.bootstrap, undefined, started, true);
    }
    if (opts.bootstrap) return new ChaosCluster(opts.bootstrap, opts.clusterDir ? readClusterInfo(opts.clusterDir) : undefined, undefined, false);
    const started = await startLocalCluster({ dir, withRegistry });
    log(`local broker ${started.bootstrap} (answered after ${started.brokerStartMs} ms)`);
    return new ChaosCluster(started.bootstrap, started, undefined, true);
  }

  /** The registry that came with the cluster, if any. */
  get registryUrl(): string | undefined {
    return (this.brokerCluster?.info ?? this.single)?.registryUrl || undefined;
  }

  /** The fault proxies in front of the nodes (none on a single broker). */
  get proxies(): readonly FaultProxy[] {
    return this.brokerCluster?.proxies ?? [];
  }

  /** The multi-broker cluster, for faults that exist only there (the options were checked for it). */
  get multiBroker(): BrokerCluster {
    if (!this.brokerCluster) throw new Error('this fault needs a multi-broker cluster with proxies');
    return this.brokerCluster;
  }

  /** The n-th broker restart (from 0): on several nodes each in turn, else the one broker, SIGKILLed and started again. */
  async restartBroker(index: number, log: (line: string) => void): Promise<void> {
    if (this.brokerCluster) {
      const nodeId = 1 + (index % this.brokerCluster.nodes.length);
      log(`broker restart ${index + 1}: node ${nodeId}`);
      await this.brokerCluster.restart(nodeId);
      return;
    }
    if (!this.single) throw new Error('broker restarts need the local cluster (no --bootstrap, or give its --cluster-dir)');
    log(`broker restart ${index + 1}`);
    this.single = await restartBroker(this.single, 'SIGKILL');
  }

  async stop(): Promise<void> {
    if (!this.own) return;
    if (this.brokerCluster) await this.brokerCluster.stop();
    else if (this.single) await stopLocalCluster(this.single.dir);
  }
}
