/** onceflow's public API: declare a topology, test it without a broker, run it exactly-once, verify it. */
export * from './dsl/index.ts';
export { compile, CompiledTopology } from './graph/index.ts';
export * from './serdes/index.ts';
export { TopologyTestDriver } from './testing/index.ts';
export type { TestDriverOptions, PipeOptions, TestRecord, DeadLetter } from './testing/index.ts';
export { Worker, type WorkerOptions } from './runtime/worker/worker.ts';
export { LINEAGE } from './core/headers.ts';
export type { WorkerEvent, WorkerStats } from './runtime/base/worker-events.ts';
export type { WorkerState } from './runtime/worker/worker-state.ts';
export type { ClientSupplier } from './runtime/base/client-supplier.ts';
export { runtimeTopology, type RuntimeTopology } from './runtime/task/worker-topology.ts';
export { parseWorkerConfig, ConfigError, type WorkerConfig, type WorkerConfigInput } from './runtime/base/config.ts';
export { RetriableError, PermanentError } from './core/stage-errors.ts';
export { WorkerError, IllegalTransitionError } from './runtime/base/errors.ts';
export * as effects from './effects/index.ts';
export { verify, formatReport, type ExpectationModel, type VerifyReport } from './verify/verify.ts';
export { startObservability, attachMetrics, createLogger, attachLogging } from './observability/index.ts';
export { OnceflowError, isOnceflowError } from './errors.ts';
