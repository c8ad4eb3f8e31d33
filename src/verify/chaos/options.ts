import { OnceflowError } from '../../errors.ts';
import type { BrokerCluster } from '../../kafka/broker-cluster.ts';
import type { ChaosPhase } from '../../runtime/base/faults.ts';
import type { PipelineName } from '../pipelines.ts';

export interface ChaosOptions {
  readonly records: number;
  readonly replicas: number;
  readonly kills: number;
  readonly brokerRestarts?: number;
  /** Replacements started before the old process with the same instance id is stopped (rolling updates do this). */
  readonly overlappingRestarts?: number;
  /** Two live processes with one instance id: one must step back, and no record may be lost. */
  readonly duplicateInstances?: number;
  /** Replicas added at 30 % of the feed and removed again at 70 % (0: none): 1 replica with scale 2 runs 1 → 3 → 1. */
  readonly scale?: number;
  readonly poison?: number;
  readonly seed?: number;
  readonly guarantee?: 'exactly_once' | 'at_least_once';
  readonly pipeline?: PipelineName;
  readonly partitions?: number;
  /** How long input keeps arriving: kills land while records flow. */
  readonly feedMs?: number;
  /** The input is stamped this long before now (a backfill): every schedule runs on old event time. 0: now. */
  readonly eventTimeAgeMs?: number;
  /** The whole input is written before the first worker starts (an app deployed on topics that hold data); kills still land over feedMs. */
  readonly backlog?: boolean;
  /** Use this broker instead of starting one (broker restarts then need `clusterDir`). */
  readonly bootstrap?: string;
  readonly clusterDir?: string;
  readonly log?: (line: string) => void;
  /** Test-only: workers commit offsets outside the transaction, which the verifier must catch. */
  readonly brokenWorker?: boolean;
  /** Place every kill in this transaction phase (default: every other kill in a random phase). */
  readonly phase?: ChaosPhase;
  /** orders only: `avro` feeds registry Avro and runs the workers with ONCEFLOW_ORDERS_FORMAT=avro (needs the registry). */
  readonly format?: 'json' | 'avro';
  /** The registry for `format: avro` when `bootstrap` is given; else the started cluster's. */
  readonly registryUrl?: string;
  /** The workers' cacheMaxRecords: 0 turns the record cache off (every aggregate update goes downstream); unset, the workers' default (bounded by bytes only). */
  readonly cacheMaxRecords?: number;
  /** The workers' processing threads (config `threads`); unset, the workers' default. */
  readonly threads?: number;
  /**
   * With `phase`: a kill is only the death at that phase. At the kill's moment the replica is armed
   * (phase-trigger.ts) and SIGKILLs itself at its next pass of the phase in a transaction that wrote
   * output, so no kill lands at a random point or where its replay could show nothing downstream.
   * Without it, each kill is a SIGKILL at a random moment and then, on the restart, the death at `phase`.
   */
  readonly onlyAtPhase?: boolean;
  /** `persistent`: the workers keep their stores in LMDB (one state dir for the run) with running checkpoints every second. */
  readonly stateStore?: 'memory' | 'persistent';
  /** With persistent stores: warm copies of each stateful task on this many other replicas (config `standbyReplicas`). */
  readonly standbyReplicas?: number;
  /** 3: a three-node cluster (replication 3, min ISR 2) with a fault proxy in front of each node. Default 1. */
  readonly brokers?: number;
  /** A running multi-broker cluster with proxies (tests share one between runs); else one is started when brokers > 1. */
  readonly cluster?: BrokerCluster;
  /** kill -9 and restart of a node, chosen in turn: a worker's transaction coordinator, the group coordinator, an output partition's leader. */
  readonly brokerKills?: number;
  /** What the broker kills aim at, in turn (default: BROKER_KILL_TARGETS). */
  readonly brokerKillOrder?: readonly BrokerKillTarget[];
  /** Stalls of every connection of one worker at the proxies: alternately shorter and longer than the session timeout. */
  readonly stalls?: number;
}

/** The three kinds of node a broker kill aims at, in turn. */
export const BROKER_KILL_TARGETS = ['transaction-coordinator', 'group-coordinator', 'partition-leader'] as const;
export type BrokerKillTarget = (typeof BROKER_KILL_TARGETS)[number];

/** How many brokers the run has: the given cluster's, else as asked (default one). */
export function brokerCount(opts: ChaosOptions): number {
  return opts.cluster ? opts.cluster.nodes.length : (opts.brokers ?? 1);
}

/** A chaos run asked for something that cannot run: the message names the option. */
export class ChaosConfigError extends OnceflowError {
  readonly code = 'CHAOS_CONFIG';
}

/** Refuses, before anything starts, the combinations of options that cannot run. */
export function checkOptions(opts: ChaosOptions, pipelineName: PipelineName): void {
  if (opts.format === 'avro' && pipelineName !== 'orders') throw new ChaosConfigError(`--format avro applies to the orders topology, not ${pipelineName}`);
  const brokers = brokerCount(opts);
  if ((opts.brokerKills || opts.stalls) && brokers < 2) throw new ChaosConfigError('--broker-kills and --stalls need a multi-broker cluster with proxies: give --brokers 3');
  if (brokers > 1 && opts.bootstrap) throw new ChaosConfigError('--brokers starts its own cluster (with fault proxies): leave out --bootstrap');
}
