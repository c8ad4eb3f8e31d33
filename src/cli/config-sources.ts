import { readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { extname } from 'node:path';
import { OnceflowError } from '../errors.ts';
import { tracingFromOtelEnv } from '../observability/tracing/otel-env.ts';
import { parseWorkerConfig, type WorkerConfig, type WorkerConfigInput } from '../runtime/base/config.ts';

type FieldKind = 'string' | 'number' | 'boolean' | 'map';
type Field = keyof WorkerConfigInput;

/**
 * How each schema field is read from text (env, flags). Typed against the schema's input, so a field
 * added to the worker config fails to compile here until it is given an env name and a parser.
 */
const FIELD_KINDS = {
  bootstrap: 'string',
  appId: 'string',
  instanceId: 'string',
  guarantee: 'string',
  commitIntervalMs: 'number',
  maxRecordsPerTransaction: 'number',
  consumeBatchSize: 'number',
  transactionTimeoutMs: 'number',
  maxPollIntervalMs: 'number',
  maxTaskIdleMs: 'number',
  sessionTimeoutMs: 'number',
  groupProtocol: 'string',
  registryUrl: 'string',
  advertisedUrl: 'string',
  queryToken: 'string',
  kafka: 'map',
  tracing: 'map',
  shutdownTimeoutMs: 'number',
  repartitionPurgeIntervalMs: 'number',
  cacheMaxBytes: 'number',
  cacheMaxRecords: 'number',
  stateStore: 'string',
  processingThread: 'boolean',
  threads: 'number',
  stateDir: 'string',
  stateCheckpointIntervalMs: 'number',
  standbyReplicas: 'number',
  unsafeCommitOffsetsOutsideTransaction: 'boolean',
} as const satisfies Record<Field, FieldKind>;

export type ScalarField = { [K in keyof typeof FIELD_KINDS]: (typeof FIELD_KINDS)[K] extends 'map' ? never : K }[keyof typeof FIELD_KINDS];
export const SCALAR_FIELDS = (Object.keys(FIELD_KINDS) as Field[]).filter((f): f is ScalarField => FIELD_KINDS[f] !== 'map');

const screamingSnake = (camel: string): string => camel.replace(/([a-z0-9])([A-Z])/g, '$1_$2').toUpperCase();

/** `ONCEFLOW_KAFKA_SECURITY_PROTOCOL` → `security.protocol`; a doubled underscore is a literal one. */
export const KAFKA_ENV_PREFIX = 'ONCEFLOW_KAFKA_';

/** The env var of each scalar worker-config field: `ONCEFLOW_` + SCREAMING_SNAKE of its name. */
export const CONFIG_ENV: Readonly<Record<ScalarField, string>> = Object.fromEntries(SCALAR_FIELDS.map((f) => [f, `ONCEFLOW_${screamingSnake(f)}`])) as Record<ScalarField, string>;

/** Names kept working from before the config layer existed (test harnesses set them). */
const ENV_ALIASES: Readonly<Record<string, ScalarField>> = { ONCEFLOW_UNSAFE_OFFSETS_OUTSIDE_TXN: 'unsafeCommitOffsetsOutsideTransaction' };

/** Process settings outside the worker schema: the CLI reads them for the health server, the logger and the type check. */
export const RUNTIME_ENV = {
  httpPort: 'ONCEFLOW_HTTP_PORT',
  dlqReadyThreshold: 'ONCEFLOW_DLQ_READY_THRESHOLD',
  dlqReadyIntervalMs: 'ONCEFLOW_DLQ_READY_INTERVAL_MS',
  logLevel: 'ONCEFLOW_LOG_LEVEL',
  logFormat: 'ONCEFLOW_LOG_FORMAT',
  /** onceflow's one cache folder: the broker jars (kafka/jars.ts reads it too) and the type check's passes. */
  cache: 'ONCEFLOW_CACHE',
  /** The type-check cache's earlier name, public in the README: an alias of `cache` for the type check only. */
  typecheckCacheAlias: 'ONCEFLOW_CACHE_DIR',
  /** Where `dev up` keeps its cluster and records its connection (default: the nearest `.onceflow/` with a dev.json from the current directory upward). */
  devClusterDir: 'ONCEFLOW_HOME',
} as const;

/** Every ONCEFLOW_* name onceflow reads, besides the `ONCEFLOW_KAFKA_*` passthrough prefix. */
export const ONCEFLOW_ENV_VARS: readonly string[] = [...Object.values(CONFIG_ENV), ...Object.keys(ENV_ALIASES), ...Object.values(RUNTIME_ENV)];

/** True for a name the config layer reads: a known variable or a librdkafka passthrough. */
export function isKnownEnvVar(name: string): boolean {
  return ONCEFLOW_ENV_VARS.includes(name) || (name.startsWith(KAFKA_ENV_PREFIX) && name.length > KAFKA_ENV_PREFIX.length);
}

export function kafkaOptionFromEnv(name: string): string {
  return name
    .slice(KAFKA_ENV_PREFIX.length)
    .toLowerCase()
    .split('__')
    .map((part) => part.replace(/_/g, '.'))
    .join('_');
}

export class ConfigSourceError extends OnceflowError {
  constructor(
    readonly code: 'CONFIG_FILE_UNREADABLE' | 'CONFIG_FILE_INVALID' | 'CONFIG_FLAG_INVALID' | 'CONFIG_ENV_INVALID',
    message: string,
    options?: { cause?: unknown },
  ) {
    super(message, options);
  }
}

function fail(code: ConfigSourceError['code'], message: string, cause?: unknown): never {
  throw new ConfigSourceError(code, message, cause === undefined ? undefined : { cause });
}

/** `dev`: the connection `onceflow dev up` recorded, used only for what no other source sets. */
export type ConfigOrigin = 'flag' | 'env' | 'file' | 'dev' | 'default';

/** Flags as commander hands them over: camelCase field names, `kafka` as repeated `key=value`. */
export type ConfigFlags = Partial<Record<ScalarField, string | number | boolean>> & { readonly kafka?: readonly string[] | Readonly<Record<string, string | number | boolean>> };

export interface ConfigSourcesInput {
  /** A YAML or JSON file with the schema's camelCase fields (`kafka:` as a mapping). */
  readonly file?: string;
  readonly env?: Readonly<Record<string, string | undefined>>;
  readonly flags?: ConfigFlags;
  /**
   * The local cluster `onceflow dev up` started: its bootstrap and registry, below every other source;
   * its client options (a `--secure` cluster's TLS and SASL settings) only when its bootstrap is the one used.
   */
  readonly devCluster?: { readonly bootstrap: string; readonly registryUrl?: string; readonly clientOptions?: Readonly<Record<string, string | number | boolean>> };
}

export interface ResolvedConfigSources {
  readonly input: WorkerConfigInput;
  /** Where each field that is set came from; fields absent here take the schema default. Kafka options as `kafka.<name>`. */
  readonly origin: Readonly<Record<string, ConfigOrigin>>;
  /** ONCEFLOW_* variables in the environment that onceflow does not read: most likely typos. */
  readonly unknownEnv: readonly string[];
}

/** Text to the field's type; text that is not a number stays text so the schema names the field in its error. */
function fromText(kind: FieldKind, raw: string): unknown {
  const v = raw.trim();
  if (kind === 'number') return v !== '' && Number.isFinite(Number(v)) ? Number(v) : raw;
  if (kind === 'boolean') {
    if (/^(true|1|yes|on)$/i.test(v)) return true;
    if (/^(false|0|no|off)$/i.test(v)) return false;
    return raw;
  }
  return raw;
}

function readFile(path: string): Record<string, unknown> {
  let text: string;
  try {
    text = readFileSync(path, 'utf8');
  } catch (e) {
    return fail('CONFIG_FILE_UNREADABLE', `cannot read config file ${path}: ${(e as NodeJS.ErrnoException).code ?? 'error'}`, e);
  }
  const format = extname(path).toLowerCase() === '.json' ? 'JSON' : 'YAML';
  // YAML 1.2 reads JSON too. Only the error's position is reported, never its message: that quotes
  // the offending line, which may hold a password.
  // Loaded only for a config file: the YAML parser was a sixth of every data tool's start-up (docs/operations.md#start-up).
  const { parseDocument } = createRequire(import.meta.url)('yaml') as typeof import('yaml');
  const doc = parseDocument(text, { prettyErrors: true });
  const first = doc.errors[0];
  if (first) {
    const at = first.linePos?.[0];
    return fail('CONFIG_FILE_INVALID', `config file ${path} is not valid ${format}${at ? ` (line ${at.line}, column ${at.col})` : ''}`);
  }
  const value: unknown = doc.toJS();
  if (value === null || value === undefined) return {};
  if (typeof value !== 'object' || Array.isArray(value)) return fail('CONFIG_FILE_INVALID', `config file ${path} must hold a mapping of config fields, not ${Array.isArray(value) ? 'a list' : typeof value}`);
  return value as Record<string, unknown>;
}

function kafkaFromFlags(kafka: ConfigFlags['kafka']): Record<string, string | number | boolean> {
  if (!kafka) return {};
  if (!Array.isArray(kafka)) return { ...(kafka as Record<string, string | number | boolean>) };
  const out: Record<string, string> = {};
  for (const kv of kafka as readonly string[]) {
    const at = kv.indexOf('=');
    // The value is never quoted back: it may be a password.
    if (at <= 0) fail('CONFIG_FLAG_INVALID', `--kafka expects key=value (e.g. --kafka security.protocol=SASL_SSL); one argument ${at === 0 ? 'has an empty key' : 'has no "="'}`);
    out[kv.slice(0, at).trim()] = kv.slice(at + 1);
  }
  return out;
}

/**
 * The worker config input from every source, field by field: flags over env over file over the dev
 * cluster's connection; what none sets is left out so the schema's default applies. Kafka options merge key by key in the same order.
 */
export function resolveConfigSources(sources: ConfigSourcesInput): ResolvedConfigSources {
  const env = sources.env ?? {};
  const flags = sources.flags ?? {};
  const file = sources.file === undefined ? {} : readFile(sources.file);
  const input: Record<string, unknown> = {};
  const origin: Record<string, ConfigOrigin> = {};

  // File fields pass through as written, unknown ones too: the strict schema then names them.
  for (const [k, v] of Object.entries(file)) {
    if (k === 'kafka' || v === undefined || v === null) continue;
    input[k] = v;
    origin[k] = 'file';
  }
  for (const f of SCALAR_FIELDS) {
    const names = [CONFIG_ENV[f], ...Object.keys(ENV_ALIASES).filter((a) => ENV_ALIASES[a] === f)];
    const raw = names.map((n) => env[n]).find((v) => v !== undefined && v !== '');
    if (raw !== undefined) {
      input[f] = fromText(FIELD_KINDS[f], raw);
      origin[f] = 'env';
    }
    const flag = flags[f];
    if (flag !== undefined) {
      input[f] = typeof flag === 'string' ? fromText(FIELD_KINDS[f], flag) : flag;
      origin[f] = 'flag';
    }
  }

  const dev = sources.devCluster;
  if (dev) {
    for (const [field, value] of [['bootstrap', dev.bootstrap], ['registryUrl', dev.registryUrl]] as const) {
      if (input[field] === undefined && value) {
        input[field] = value;
        origin[field] = 'dev';
      }
    }
  }

  const kafka: Record<string, unknown> = {};
  const fileKafka = file.kafka;
  if (fileKafka !== undefined && fileKafka !== null) {
    if (typeof fileKafka !== 'object' || Array.isArray(fileKafka)) fail('CONFIG_FILE_INVALID', `config file ${sources.file}: kafka must be a mapping of librdkafka options`);
    for (const [k, v] of Object.entries(fileKafka)) {
      kafka[k] = v;
      origin[`kafka.${k}`] = 'file';
    }
  }
  const unknownEnv: string[] = [];
  for (const [name, v] of Object.entries(env)) {
    if (!name.startsWith('ONCEFLOW_') || v === undefined) continue;
    if (name.startsWith(KAFKA_ENV_PREFIX) && name.length > KAFKA_ENV_PREFIX.length) {
      const key = kafkaOptionFromEnv(name);
      kafka[key] = v;
      origin[`kafka.${key}`] = 'env';
    } else if (!isKnownEnvVar(name) && !name.startsWith('ONCEFLOW_TEST_')) {
      unknownEnv.push(name);
    }
  }
  for (const [k, v] of Object.entries(kafkaFromFlags(flags.kafka))) {
    kafka[k] = v;
    origin[`kafka.${k}`] = 'flag';
  }
  // A secure dev cluster's settings belong to its listener: given another bootstrap they would be wrong.
  if (dev?.clientOptions && origin.bootstrap === 'dev') {
    for (const [k, v] of Object.entries(dev.clientOptions)) {
      if (kafka[k] !== undefined) continue;
      kafka[k] = v;
      origin[`kafka.${k}`] = 'dev';
    }
  }
  if (Object.keys(kafka).length > 0) input.kafka = kafka;
  // The OTEL_* variables over the file's section, field by field, as ONCEFLOW_* ones are over its fields.
  const tracing = tracingFromOtelEnv(env);
  if (tracing !== undefined) {
    const fileTracing = file.tracing;
    input.tracing = { ...(typeof fileTracing === 'object' && fileTracing !== null ? fileTracing : {}), ...tracing };
    origin.tracing = 'env';
  }
  return { input: input as WorkerConfigInput, origin, unknownEnv: unknownEnv.sort() };
}

/** The input for parseWorkerConfig: flags > env > file > schema defaults. */
export function resolveWorkerConfigInput(sources: ConfigSourcesInput): WorkerConfigInput {
  return resolveConfigSources(sources).input;
}

/** Resolve and validate in one step; a ConfigError from the schema names the field and what it accepts. */
export function loadWorkerConfig(sources: ConfigSourcesInput): WorkerConfig {
  return parseWorkerConfig(resolveWorkerConfigInput(sources));
}

export { FIELD_KINDS as CONFIG_FIELD_KINDS };

export type LogFormat = 'json' | 'pretty';
const LOG_LEVEL_NAMES = ['trace', 'debug', 'info', 'warn', 'error', 'fatal', 'silent'] as const;

export interface RuntimeOptions {
  /** Health and metrics port; undefined = no server. */
  readonly httpPort: number | undefined;
  readonly dlqThreshold: { readonly count: number; readonly intervalMs: number };
  readonly logLevel: (typeof LOG_LEVEL_NAMES)[number];
  readonly logFormat: LogFormat;
}

export interface RuntimeFlags {
  readonly httpPort?: string | number;
  readonly dlqReadyThreshold?: string | number;
  readonly dlqReadyIntervalMs?: string | number;
  readonly logLevel?: string;
  readonly logFormat?: string;
}

/** The health server and logger settings, flags over env (ONCEFLOW_HTTP_PORT, ...); pretty logs by default only on a terminal. */
export function resolveRuntimeOptions(env: Readonly<Record<string, string | undefined>>, flags: RuntimeFlags = {}, isTty = false): RuntimeOptions {
  const pick = (flag: string | number | undefined, name: string): { raw: string; from: string } | undefined => {
    if (flag !== undefined) return { raw: String(flag), from: `--${screamingSnake(name).toLowerCase().replace(/_/g, '-')}` };
    const envName = RUNTIME_ENV[name as keyof typeof RUNTIME_ENV];
    const v = env[envName];
    return v === undefined || v === '' ? undefined : { raw: v, from: envName };
  };
  const int = (flag: string | number | undefined, name: keyof typeof RUNTIME_ENV, min: number, max: number): number | undefined => {
    const got = pick(flag, name);
    if (!got) return undefined;
    const n = Number(got.raw);
    if (!Number.isInteger(n) || n < min || n > max) fail('CONFIG_ENV_INVALID', `${got.from} must be an integer from ${min} to ${max}, got ${JSON.stringify(got.raw)}`);
    return n;
  };
  const oneOf = <T extends string>(flag: string | undefined, name: keyof typeof RUNTIME_ENV, allowed: readonly T[]): T | undefined => {
    const got = pick(flag, name);
    if (!got) return undefined;
    if (!(allowed as readonly string[]).includes(got.raw)) fail('CONFIG_ENV_INVALID', `${got.from} must be one of ${allowed.join(' | ')}, got ${JSON.stringify(got.raw)}`);
    return got.raw as T;
  };
  return {
    httpPort: int(flags.httpPort, 'httpPort', 0, 65_535),
    dlqThreshold: {
      count: int(flags.dlqReadyThreshold, 'dlqReadyThreshold', 1, Number.MAX_SAFE_INTEGER) ?? 100,
      intervalMs: int(flags.dlqReadyIntervalMs, 'dlqReadyIntervalMs', 1_000, 86_400_000) ?? 60_000,
    },
    logLevel: oneOf(flags.logLevel, 'logLevel', LOG_LEVEL_NAMES) ?? 'info',
    logFormat: oneOf(flags.logFormat, 'logFormat', ['json', 'pretty'] as const) ?? (isTty ? 'pretty' : 'json'),
  };
}
