import type { LiveOutputReport } from '../live-output.ts';
import type { VerifyReport } from '../verify.ts';
import type { BrokerKillTarget, ChaosOptions } from './options.ts';
import type { OutputCheck } from './output-check.ts';

/** What a chaos run reports (the CLI prints it as JSON). */
export interface ChaosResult {
  readonly records: number;
  readonly replicas: number;
  readonly kills: number;
  readonly killPhases: Record<string, number>;
  readonly brokerRestarts: number;
  readonly overlappingRestarts: number;
  readonly duplicateInstances: number;
  /** Of the duplicate-instance processes: how many stopped with DUPLICATE_INSTANCE_ID (one per event is expected). */
  readonly steppedBack: number;
  readonly scaled: boolean;
  /** The most replicas that ran at once (scaling included). */
  readonly peakReplicas: number;
  readonly guarantee: string;
  readonly format: 'json' | 'avro';
  readonly eventTimeAgeMs: number;
  readonly pipeline: string;
  /** The run's result topic; `verify.duplicatesByTopic` counts it apart from the intermediate topics. */
  readonly outputTopic: string;
  readonly seed: number;
  readonly duplicates: number;
  readonly lost: number;
  readonly aggregateMismatches: number;
  readonly dlqRecords: number;
  readonly poisonInjected: number;
  /** null: the workers' default. */
  readonly cacheMaxRecords: number | null;
  /** The workers' processing threads; null: the workers' default. */
  readonly threads: number | null;
  readonly stateStore: 'memory' | 'persistent';
  /** The workers' standby replicas; null: none. */
  readonly standbyReplicas: number | null;
  readonly abortedSeenByReadUncommitted: number;
  readonly brokers: number;
  readonly brokerKills: number;
  /** Per kill: what it aimed at and which node that was. */
  readonly brokerKillTargets: readonly { readonly target: BrokerKillTarget; readonly nodeId: number }[];
  readonly stalls: number;
  readonly stallsBeyondSessionTimeout: number;
  /** Workers that exited on their own (not killed by the harness), each started again. */
  readonly workerExits: number;
  /** What a read_committed reader was shown during the run. */
  readonly liveReader: Omit<LiveOutputReport, 'examples'>;
  /** From the commit of a fresh producer's marker on every output partition until a read_committed reader had them all; null: not within 60 s. */
  readonly endMarkerMs: number | null;
  readonly durationMs: number;
  readonly ok: boolean;
  readonly verify: VerifyReport;
  readonly liveReaderExamples: readonly string[];
}

/** The run as it was set up: what the report repeats of the options, with their defaults filled in. */
export interface RunSetup {
  readonly opts: ChaosOptions;
  readonly pipelineName: string;
  readonly outputTopic: string;
  readonly seed: number;
  readonly guarantee: string;
  readonly format: 'json' | 'avro';
  readonly eventTimeAgeMs: number;
  readonly brokers: number;
  /** Epoch ms when the run began. */
  readonly startedAt: number;
}

/** What the fault kinds counted while they ran. */
export interface FaultTallies {
  readonly killPhases: Record<string, number>;
  readonly steppedBack: number;
  readonly scaled: boolean;
  readonly peakReplicas: number;
  readonly brokerKillTargets: readonly { readonly target: BrokerKillTarget; readonly nodeId: number }[];
  readonly stallsBeyondSessionTimeout: number;
  readonly workerExits: number;
}

export function chaosResult(setup: RunSetup, faults: FaultTallies, check: OutputCheck): ChaosResult {
  const { opts } = setup;
  const { report, shown, liveOk, endMarkerMs } = check;
  const poisonInjected = opts.poison ?? 0;
  const { examples: liveReaderExamples, ...liveReaderCounts } = shown;
  return {
    records: report.inputRecords,
    replicas: opts.replicas,
    kills: opts.kills,
    killPhases: faults.killPhases,
    brokerRestarts: opts.brokerRestarts ?? 0,
    overlappingRestarts: opts.overlappingRestarts ?? 0,
    duplicateInstances: opts.duplicateInstances ?? 0,
    steppedBack: faults.steppedBack,
    scaled: faults.scaled,
    peakReplicas: faults.peakReplicas,
    guarantee: setup.guarantee,
    pipeline: setup.pipelineName,
    outputTopic: setup.outputTopic,
    format: setup.format,
    eventTimeAgeMs: setup.eventTimeAgeMs,
    seed: setup.seed,
    duplicates: report.duplicates,
    lost: report.lost,
    aggregateMismatches: report.aggregateMismatches,
    dlqRecords: report.dlqRecords,
    poisonInjected,
    cacheMaxRecords: opts.cacheMaxRecords ?? null,
    threads: opts.threads ?? null,
    stateStore: opts.stateStore ?? 'memory',
    standbyReplicas: opts.standbyReplicas ?? null,
    abortedSeenByReadUncommitted: report.abortedSeenByReadUncommitted ?? 0,
    brokers: setup.brokers,
    brokerKills: opts.brokerKills ?? 0,
    brokerKillTargets: faults.brokerKillTargets,
    stalls: opts.stalls ?? 0,
    stallsBeyondSessionTimeout: faults.stallsBeyondSessionTimeout,
    workerExits: faults.workerExits,
    liveReader: liveReaderCounts,
    endMarkerMs,
    durationMs: Date.now() - setup.startedAt,
    ok: report.ok && report.dlqRecords === poisonInjected && liveOk && endMarkerMs !== null,
    verify: report,
    liveReaderExamples,
  };
}
