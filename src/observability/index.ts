export { attachMetrics, type AttachedMetrics, type MetricsOptions } from './metrics.ts';
export { Readiness, startObservability, type DlqThreshold, type HealthState, type ObservabilityOptions, type ObservabilityServer, type ReadinessOptions } from './health.ts';
export { addLogSecrets, attachLogging, createLogger, formatPretty, LOG_LEVELS, type AttachedLogging, type Logger, type LoggerOptions, type LoggingOptions, type LogLevel, type LogSink } from './logger.ts';
export { redactDeep, scrub, secretValues, REDACTED } from './redact.ts';
export { ObservabilityServerError } from './errors.ts';
export type { ObservedWorker, PartitionLag, TopicRecordCount } from './worker-view.ts';
