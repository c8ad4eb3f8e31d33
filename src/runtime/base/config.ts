import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { z } from 'zod';
import { OnceflowError } from '../../errors.ts';

export class ConfigError extends OnceflowError {
  readonly code = 'CONFIG_INVALID';
  constructor(
    message: string,
    readonly issues: readonly { field: string; message: string }[],
  ) {
    super(message);
  }
}

const kafkaName = /^[a-zA-Z0-9._-]+$/;

/** Keys whose values never appear in logs, errors or `config print`. */
export const SECRET_OPTION = /(password|secret|token|key\.pem|sasl\.jaas)/i;

/** Samplers by their OTEL_TRACES_SAMPLER names; the ratio ones take `samplerArg`. */
export const TRACES_SAMPLERS = ['parentbased_traceidratio', 'parentbased_always_on', 'parentbased_always_off', 'traceidratio', 'always_on', 'always_off'] as const;

/**
 * OpenTelemetry traces (observability/tracing/): off unless this section is given (the CLI also fills
 * it from the standard OTEL_* variables, cli/config-sources.ts). `endpoint` is the collector's base
 * URL, as OTEL_EXPORTER_OTLP_ENDPOINT: the exporter posts to `<endpoint>/v1/traces`.
 */
export const tracingConfigSchema = z
  .object({
    exporter: z.enum(['otlp', 'console', 'none']).default('otlp'),
    endpoint: z.string().url().default('http://localhost:4318'),
    /** The exporter sends OTLP as JSON over HTTP: the one protocol its optional package speaks without protobuf. */
    protocol: z.literal('http/json', { error: 'must be http/json (OTLP over HTTP with JSON bodies)' }).default('http/json'),
    sampler: z.enum(TRACES_SAMPLERS).default('parentbased_traceidratio'),
    /** The ratio of traces started here that are recorded, for the ratio samplers. */
    samplerArg: z.number().min(0).max(1).default(1),
    serviceName: z.string().min(1).optional(),
  })
  .strict();

export type TracingConfig = z.output<typeof tracingConfigSchema>;

export const workerConfigSchema = z
  .object({
    bootstrap: z
      .string({ error: (issue) => (issue.input === undefined ? 'is required: --bootstrap <host:port[,host:port]> or ONCEFLOW_BOOTSTRAP (`onceflow dev up` starts a local broker)' : undefined) })
      .min(1, 'is required (host:port[,host:port])'),
    appId: z
      .string({ error: (issue) => (issue.input === undefined ? 'is required: --app-id <id> or ONCEFLOW_APP_ID (`run` takes the topology\'s)' : undefined) })
      .regex(kafkaName, 'must match [a-zA-Z0-9._-]+ (it is the group id and transactional id prefix)').max(200),
    /**
     * Stable per replica (a pod name): the transactional id is `<appId>-<instanceId>`, so a restart fences
     * its own earlier incarnation. Unset, the worker claims one unique on its host (instance-id.ts).
     */
    instanceId: z.string().regex(kafkaName, 'must match [a-zA-Z0-9._-]+').optional(),
    guarantee: z.enum(['exactly_once', 'at_least_once']).default('exactly_once'),
    commitIntervalMs: z.number().int().min(1).max(60_000).default(100),
    maxRecordsPerTransaction: z.number().int().min(1).default(20_000),
    consumeBatchSize: z.number().int().min(1).max(100_000).default(5_000),
    /** Kafka Streams uses 10 s under EOS: a crashed worker's open transaction blocks read_committed readers for at most this long. */
    transactionTimeoutMs: z.number().int().min(1_000).max(900_000).default(10_000),
    maxPollIntervalMs: z.number().int().min(1_000).default(300_000),
    /**
     * Kafka Streams' max.task.idle.ms (KIP-353, KIP-695): a task that reads several input partitions
     * (a join, a table beside a stream) takes their records in timestamp order, and does not take one
     * while another of its inputs has nothing buffered but is known to hold unread records. 0: wait
     * only for those; > 0: also wait this long for an input that is caught up, in case more arrives;
     * -1: never wait (records go in the order they are fetched).
     */
    maxTaskIdleMs: z.number().int().min(-1).max(600_000).default(0),
    sessionTimeoutMs: z.number().int().min(1_000).default(10_000),
    /**
     * The consumer group protocol (docs/operations.md, rebalancing). `consumer` (KIP-848, Kafka >= 4.0):
     * the broker assigns, incrementally, and a joining topology keeps its tasks through a rebalance;
     * `classic`: the client assigns, and a joining topology's rebalances revoke every task. `auto`: the
     * consumer protocol for a joining topology where the broker serves it, classic otherwise.
     */
    groupProtocol: z.enum(['classic', 'consumer', 'auto']).default('auto'),
    registryUrl: z.string().url().optional(),
    /** librdkafka options passed through unchanged to every client (security, tuning). */
    kafka: z.record(z.string(), z.union([z.string(), z.number(), z.boolean()])).default({}),
    shutdownTimeoutMs: z.number().int().min(1_000).default(30_000),
    /**
     * Kafka Streams' repartition.purge.interval.ms: at most this often, after a commit, the worker deletes
     * the records of its repartition partitions below the offsets it committed (repartition-purge.ts);
     * repartition topics have no time retention, so this is what keeps them bounded. 0: after every commit.
     */
    repartitionPurgeIntervalMs: z.number().int().min(0).default(30_000),
    /**
     * Kafka Streams' record cache (`statestore.cache.max.bytes`, 10 MiB there too): the key-value aggregates
     * of all of the worker's tasks hold back their latest result per key, up to this many bytes together,
     * and send each downstream once, when the transaction commits (past the limit, the least recently
     * updated first). 0: every update goes downstream at once. The store and its changelog are exact
     * either way; only the intermediate results of a key within one commit interval are folded.
     */
    cacheMaxBytes: z.number().int().min(0).default(10 * 1024 * 1024),
    /** Besides the bytes, keys each aggregate of each task holds back at most; 0 turns the cache off. Default: no count limit. */
    cacheMaxRecords: z.number().int().min(0).max(10_000_000).optional(),
    /**
     * Runs the stateless sub-topologies' stages (deserialize, stage functions, serialize) on a helper
     * thread while the main thread consumes and produces (runtime/offload/). Only for a topology run from
     * its file (`onceflow run`), and only for sub-topologies without stores or effects.
     */
    processingThread: z.boolean().default(true),
    /**
     * How many processing threads (runtime/offload/): each computes stateless runs and hosts tasks of the
     * stateful sub-topologies with their stores (Kafka Streams' num.stream.threads, except that the Kafka
     * clients and the transaction stay on the main thread). 0, or processingThread false: the main thread
     * runs every stage.
     */
    threads: z.number().int().min(0).max(32).default(1),
    /** `persistent` keeps each task's stores in LMDB under stateDir, so a clean restart restores only the changelog's tail. */
    stateStore: z.enum(['memory', 'persistent']).default('memory'),
    /**
     * Exactly once with persistent stores: how often the stores are synced and a changelog checkpoint
     * written while running, so that a replica killed mid-stream restores only the changelog written
     * since (lmdb-store.ts, state-checkpoints.ts). 0: only at a clean close.
     */
    stateCheckpointIntervalMs: z.number().int().min(0).default(10_000),
    /** Per worker, `<stateDir>/<appId>/<instanceId>/<task>`: mount a volume here to keep state across pod restarts. */
    stateDir: z.string().min(1).default(() => join(tmpdir(), 'onceflow-state')),
    /**
     * Kafka Streams' num.standby.replicas: each stateful task is also kept warm on this many other
     * replicas, which read its changelog into their own persistent stores (runtime/standby/), so a task
     * that moves to one of them restores only the changelog's tail. Needs `stateStore: persistent`.
     */
    standbyReplicas: z.number().int().min(0).max(8).default(0),
    /**
     * The URL other replicas and `onceflow query` reach this one's HTTP server at (interactive queries),
     * e.g. `http://10.0.0.7:9464`: written to the application's `<appId>-endpoints` topic at start.
     */
    advertisedUrl: z.string().url().optional(),
    /**
     * Set, the store routes of the HTTP server (`/stores`, `/metadata`) answer only requests with
     * `Authorization: Bearer <queryToken>`, and routed queries carry it to the owner: the port also
     * serves probes and metrics to anyone who reaches it. All replicas of an app share one token.
     */
    queryToken: z
      .string()
      .min(16, 'must be at least 16 characters (a guessable token protects nothing; `openssl rand -hex 32` makes one)')
      .regex(/^[\x21-\x7e]+$/, 'must be printable ASCII without spaces (it travels in an HTTP header)')
      .optional(),
    tracing: tracingConfigSchema.optional(),
    /** Test-only: commit the consumer offsets outside the transaction, to prove the verifier catches it. */
    unsafeCommitOffsetsOutsideTransaction: z.boolean().default(false),
  })
  .strict()
  .superRefine((c, ctx) => {
    if (c.transactionTimeoutMs >= c.maxPollIntervalMs) {
      ctx.addIssue({ code: 'custom', path: ['transactionTimeoutMs'], message: `(${c.transactionTimeoutMs}) must be below maxPollIntervalMs (${c.maxPollIntervalMs})` });
    }
    if (c.commitIntervalMs >= c.transactionTimeoutMs) {
      ctx.addIssue({ code: 'custom', path: ['commitIntervalMs'], message: `(${c.commitIntervalMs}) must be below transactionTimeoutMs (${c.transactionTimeoutMs})` });
    }
    if (c.standbyReplicas > 0 && c.stateStore !== 'persistent') {
      ctx.addIssue({ code: 'custom', path: ['standbyReplicas'], message: `(${c.standbyReplicas}) needs stateStore: persistent (a warm copy is kept on disk, where the task finds it when it moves here)` });
    }
    for (const key of Object.keys(c.kafka)) {
      if (['transactional.id', 'group.id', 'isolation.level', 'enable.auto.commit', 'bootstrap.servers', 'group.protocol'].includes(key)) {
        ctx.addIssue({ code: 'custom', path: ['kafka', key], message: 'is set by onceflow itself and cannot be overridden' });
      }
    }
  });

export type WorkerConfigInput = z.input<typeof workerConfigSchema>;
export type WorkerConfig = z.output<typeof workerConfigSchema>;
/** A worker's configuration once its instance id is known (given, or claimed at construction). */
export type ResolvedWorkerConfig = WorkerConfig & { readonly instanceId: string };

/** The one place config is validated: every entry point (CLI, library) goes through here. */
export function parseWorkerConfig(input: unknown): WorkerConfig {
  const result = workerConfigSchema.safeParse(input);
  if (result.success) return result.data;
  const issues = result.error.issues.map((i) => ({ field: i.path.join('.') || '(root)', message: i.message }));
  throw new ConfigError(`invalid worker configuration: ${issues.map((i) => `${i.field} ${i.message}`).join('; ')}`, issues);
}

export function transactionalId(config: ResolvedWorkerConfig): string {
  return `${config.appId}-${config.instanceId}`;
}

export function redact(options: Readonly<Record<string, unknown>>): Record<string, unknown> {
  return Object.fromEntries(Object.entries(options).map(([k, v]) => [k, SECRET_OPTION.test(k) ? '***' : v]));
}
