import { mkdirSync, rmSync } from 'node:fs';
import { connect } from 'node:net';
import { join, resolve } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { OnceflowError } from '../errors.ts';
import { withAdmin } from './admin.ts';
import { FaultProxy } from './fault-proxy.ts';
import { LocalClusterError } from './errors.ts';
import { readClusterInfo, writeClusterInfo, type ClusterNodeInfo, type LocalClusterInfo } from './cluster-info.ts';
import { newClusterId, type ClusterNodeSettings } from './broker-config.ts';
import { freePort } from './ports.ts';
import { isAlive, killQuietly, stopProcess } from './processes.ts';
import { startBroker } from './broker-process.ts';
import { startRegistry } from './registry-process.ts';
import { ensureKafkaJars, ensureRegistryJars } from './jars.ts';
import { stopLocalCluster } from './local-cluster.ts';

/**
 * A local KRaft cluster of several combined broker+controller nodes from the same jars as the single dev
 * broker (broker-process.ts starts each node): replication factor 3 and min.insync.replicas 2 for every topic,
 * the consumer offsets and the transaction log included, so that one node can die without losing a committed
 * record or a transaction's state. With `proxies`, a FaultProxy in this process sits in front of each node's
 * client listener and the nodes advertise it, so every client connection can be stalled, delayed or cut;
 * replication between the nodes does not go through it.
 */
export interface BrokerClusterOptions {
  readonly dir: string;
  /** Default 3. */
  readonly brokers?: number;
  /** Fault proxies in front of the client listeners; they live as long as this process. */
  readonly proxies?: boolean;
  readonly withRegistry?: boolean;
  /** Stop what runs there and start empty. */
  readonly fresh?: boolean;
}

/** The coordinator lookup failed (no node answered, or every answer was an error) within its time. */
export class CoordinatorLookupError extends OnceflowError {
  readonly code = 'COORDINATOR_NOT_FOUND';
}

/** `dev up --brokers` was given a count a cluster cannot have. */
export class BrokerCountError extends OnceflowError {
  readonly code = 'BROKER_COUNT';
}

export class BrokerCluster {
  private constructor(
    private current: LocalClusterInfo,
    private readonly nodeProxies: ReadonlyMap<number, FaultProxy>,
    private readonly settings: ReadonlyMap<number, ClusterNodeSettings>,
  ) {}

  /**
   * Starts every node (concurrently: a node waits for a quorum of controllers before it answers). A stopped
   * cluster recorded in the directory starts again on its data and ports; nodes still running are kept.
   */
  static async start(opts: BrokerClusterOptions): Promise<BrokerCluster> {
    const dir = resolve(opts.dir);
    const count = opts.brokers ?? 3;
    if (count < 2) throw new BrokerCountError(`a broker cluster has 2 or more nodes (asked: ${count}); one node is startLocalCluster's`);
    let existing = readClusterInfo(dir);
    if (existing && (opts.fresh || existing.brokers?.length !== count || existing.secure || !existing.clusterId)) {
      await stopLocalCluster(dir);
      rmSync(dir, { recursive: true, force: true });
      existing = undefined;
    }
    await ensureKafkaJars();
    if (opts.withRegistry) await ensureRegistryJars();
    mkdirSync(dir, { recursive: true });
    const clusterId = existing?.clusterId ?? newClusterId();
    const nodes: ClusterNodeInfo[] =
      existing?.brokers?.map((n) => ({ ...n })) ??
      (await Promise.all(
        Array.from({ length: count }, async (_, i) => {
          const clientPort = await freePort();
          return {
            nodeId: i + 1,
            pid: 0,
            clientPort,
            advertisedPort: opts.proxies ? await freePort() : clientPort,
            internalPort: await freePort(),
            controllerPort: await freePort(),
            dir: join(dir, `broker-${i + 1}`),
            log: join(dir, `broker-${i + 1}`, 'broker.log'),
            startMs: 0,
          };
        }),
      ));
    const proxies = new Map<number, FaultProxy>();
    if (opts.proxies) {
      for (const n of nodes) proxies.set(n.nodeId, await FaultProxy.start({ targetPort: n.clientPort, listenPort: n.advertisedPort }));
    }
    const quorumVoters = nodes.map((n) => `${n.nodeId}@127.0.0.1:${n.controllerPort}`).join(',');
    const replicationFactor = Math.min(3, count);
    const settings = new Map<number, ClusterNodeSettings>(
      nodes.map((n) => [n.nodeId, { nodeId: n.nodeId, clusterId, quorumVoters, internalPort: n.internalPort, advertisedPort: n.advertisedPort, replicationFactor, minInsyncReplicas: replicationFactor - 1 }]),
    );
    const registryRuns = existing !== undefined && isAlive(existing.registryPid);
    const registryPort = opts.withRegistry && !registryRuns ? await freePort() : 0;
    const started = await Promise.allSettled([
      ...nodes.map(async (n, i) => {
        if (isAlive(n.pid)) return;
        mkdirSync(n.dir, { recursive: true });
        const handle = await startBroker(n.dir, n.clientPort, n.controllerPort, undefined, settings.get(n.nodeId));
        nodes[i] = { ...n, pid: handle.pid, startMs: handle.startMs };
      }),
      registryPort > 0 ? startRegistry(dir, registryPort) : Promise.resolve(undefined),
    ]);
    const registry = started.at(-1)?.status === 'fulfilled' ? (started.at(-1) as PromiseFulfilledResult<Awaited<ReturnType<typeof startRegistry>> | undefined>).value : undefined;
    const failed = started.find((s): s is PromiseRejectedResult => s.status === 'rejected');
    if (failed) {
      for (const n of nodes) killQuietly(n.pid, 'SIGKILL');
      if (registry) killQuietly(registry.pid, 'SIGKILL');
      await Promise.all([...proxies.values()].map((p) => p.close()));
      throw failed.reason;
    }
    const first = nodes[0]!;
    const info: LocalClusterInfo = {
      bootstrap: nodes.map((n) => `127.0.0.1:${n.advertisedPort}`).join(','),
      registryUrl: registry?.url ?? (registryRuns ? existing!.registryUrl : ''),
      brokerPid: first.pid,
      registryPid: registry?.pid ?? (registryRuns ? existing!.registryPid : 0),
      dir,
      brokerLog: first.log,
      registryLog: join(dir, 'registry.log'),
      brokerStartMs: Math.max(...nodes.map((n) => n.startMs)),
      registryStartMs: registry?.startMs ?? existing?.registryStartMs ?? 0,
      brokerPort: first.clientPort,
      controllerPort: first.controllerPort,
      brokers: nodes,
      clusterId,
    };
    writeClusterInfo(info);
    return new BrokerCluster(info, proxies, settings);
  }

  get info(): LocalClusterInfo {
    return this.current;
  }

  /** What clients use: every node's advertised (proxied) address. */
  get bootstrap(): string {
    return this.current.bootstrap;
  }

  get nodes(): readonly ClusterNodeInfo[] {
    return this.current.brokers ?? [];
  }

  /** The fault proxy in front of a node; undefined without proxies. */
  proxy(nodeId: number): FaultProxy | undefined {
    return this.nodeProxies.get(nodeId);
  }

  get proxies(): readonly FaultProxy[] {
    return [...this.nodeProxies.values()];
  }

  private node(nodeId: number): ClusterNodeInfo {
    const node = this.nodes.find((n) => n.nodeId === nodeId);
    if (!node) throw new LocalClusterError('NOT_RUNNING', `the cluster in ${this.current.dir} has no node ${nodeId}`);
    return node;
  }

  private record(node: ClusterNodeInfo): void {
    const brokers = this.nodes.map((n) => (n.nodeId === node.nodeId ? node : n));
    this.current = { ...this.current, brokers, brokerPid: brokers[0]!.pid };
    writeClusterInfo(this.current);
  }

  /** kill -9 of one node: no controlled shutdown, its leaderships and coordinators move only when the controller notices. */
  async kill(nodeId: number): Promise<void> {
    const node = this.node(nodeId);
    killQuietly(node.pid, 'SIGKILL');
    await stopProcess(node.pid, 0);
    this.record({ ...node, pid: 0 });
  }

  /** Starts a node again on its data and ports; resolves once it answers. */
  async startNode(nodeId: number): Promise<void> {
    const node = this.node(nodeId);
    if (isAlive(node.pid)) return;
    const handle = await startBroker(node.dir, node.clientPort, node.controllerPort, undefined, this.settings.get(nodeId));
    this.record({ ...node, pid: handle.pid, startMs: handle.startMs });
  }

  async restart(nodeId: number): Promise<void> {
    await this.kill(nodeId);
    await this.startNode(nodeId);
  }

  /** The node coordinating a transactional id's transactions (the leader of its __transaction_state partition). */
  transactionCoordinator(transactionalId: string, timeoutMs = 30_000): Promise<number> {
    return this.findCoordinator(transactionalId, 1, timeoutMs);
  }

  /** The node coordinating a consumer group (the leader of its __consumer_offsets partition). */
  groupCoordinator(groupId: string, timeoutMs = 30_000): Promise<number> {
    return this.findCoordinator(groupId, 0, timeoutMs);
  }

  /** Partition → leader node id; partitions without a leader at the moment are left out. */
  async partitionLeaders(topic: string): Promise<Map<number, number>> {
    const [meta] = await withAdmin(this.directBootstrap(), (admin) => admin.fetchTopicMetadata({ topics: [topic] }));
    const leaders = new Map<number, number>();
    for (const p of meta?.partitions ?? []) if (p.leader >= 0) leaders.set(p.partitionId, p.leader);
    return leaders;
  }

  /** Stops every node, the registry and the proxies; the record stays, without pids. */
  async stop(): Promise<void> {
    await stopLocalCluster(this.current.dir);
    await Promise.all(this.proxies.map((p) => p.close()));
    this.current = readClusterInfo(this.current.dir) ?? this.current;
  }

  /** The live nodes' own client listeners: lookups during a fault must not wait behind the proxies. */
  private directBootstrap(): string {
    return this.nodes
      .filter((n) => isAlive(n.pid))
      .map((n) => `127.0.0.1:${n.clientPort}`)
      .join(',');
  }

  /** FindCoordinator asked of each live node in turn until one names a coordinator (during a failover the first answers are errors). */
  private async findCoordinator(key: string, keyType: 0 | 1, timeoutMs: number): Promise<number> {
    const deadline = Date.now() + timeoutMs;
    let last = 'no node is running';
    for (;;) {
      for (const n of this.nodes.filter((node) => isAlive(node.pid))) {
        try {
          const answer = await findCoordinatorRequest(n.clientPort, key, keyType);
          if (answer.errorCode === 0) return answer.nodeId;
          last = `node ${n.nodeId} answered error ${answer.errorCode}`;
        } catch (e) {
          last = `node ${n.nodeId}: ${(e as Error).message}`;
        }
      }
      if (Date.now() > deadline) throw new CoordinatorLookupError(`no coordinator for ${keyType === 1 ? 'transactional id' : 'group'} ${key} within ${timeoutMs} ms: ${last}`);
      await sleep(500);
    }
  }
}

const FIND_COORDINATOR = 10;

/**
 * One FindCoordinator v1 request on a fresh connection (v1: not a flexible version, so no tagged fields; Kafka 4
 * still serves it). Request: header (api key, version, correlation id, client id), key, key type. Response:
 * correlation id, throttle ms, error code, error message, node id, host, port.
 */
export async function findCoordinatorRequest(port: number, key: string, keyType: 0 | 1, timeoutMs = 5_000): Promise<{ errorCode: number; nodeId: number }> {
  const clientId = Buffer.from('onceflow-coordinator-lookup');
  const keyBytes = Buffer.from(key);
  const body = Buffer.alloc(2 + 2 + 4 + 2 + clientId.length + 2 + keyBytes.length + 1);
  let at = body.writeInt16BE(FIND_COORDINATOR, 0);
  at = body.writeInt16BE(1, at);
  at = body.writeInt32BE(1, at);
  at = body.writeInt16BE(clientId.length, at);
  at += clientId.copy(body, at);
  at = body.writeInt16BE(keyBytes.length, at);
  at += keyBytes.copy(body, at);
  body.writeInt8(keyType, at);
  const size = Buffer.alloc(4);
  size.writeInt32BE(body.length);
  return new Promise((resolvePromise, reject) => {
    const socket = connect(port, '127.0.0.1');
    const timer = setTimeout(() => {
      socket.destroy();
      reject(new Error(`FindCoordinator to port ${port}: no answer within ${timeoutMs} ms`));
    }, timeoutMs);
    let received = Buffer.alloc(0);
    socket.on('connect', () => socket.write(Buffer.concat([size, body])));
    socket.on('error', (e) => {
      clearTimeout(timer);
      reject(e);
    });
    socket.on('data', (chunk: Buffer) => {
      received = Buffer.concat([received, chunk]);
      if (received.length < 4 || received.length < 4 + received.readInt32BE(0)) return;
      clearTimeout(timer);
      socket.destroy();
      // size, correlation id, throttle ms, then the error code.
      const errorCode = received.readInt16BE(12);
      const messageLength = received.readInt16BE(14);
      const nodeId = received.readInt32BE(16 + Math.max(0, messageLength));
      resolvePromise({ errorCode, nodeId });
    });
  });
}
