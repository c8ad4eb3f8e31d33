import type { Command } from 'commander';
import { defineCommand } from './commands.ts';
import { Document, isMap, isPair, isScalar, type Pair } from 'yaml';
import { parseWorkerConfig } from '../runtime/base/config.ts';
import { loadTopology } from '../dsl/load.ts';
import { redactDeep } from '../observability/redact.ts';
import { CONFIG_ENV, CONFIG_FIELD_KINDS, resolveConfigSources, SCALAR_FIELDS, type ConfigFlags, type ConfigOrigin } from './config-sources.ts';
import { devConnection } from './connection.ts';

const kebab = (camel: string): string => camel.replace(/([a-z0-9])([A-Z])/g, '$1-$2').toLowerCase();

/** Fields a user sets on the command line; the test-only switch stays env-only so nobody types it by accident. */
const FLAG_FIELDS = SCALAR_FIELDS.filter((f) => f !== 'unsafeCommitOffsetsOutsideTransaction');

/**
 * Adds `--config <file>`, one flag per worker config field (`--commit-interval-ms`, ...) and a
 * repeatable `--kafka key=value`, so every command that builds a worker config accepts the same flags.
 */
export function addConfigOptions(command: Command): Command {
  command.option('--config <file>', 'YAML or JSON config file (lowest precedence after defaults)');
  for (const f of FLAG_FIELDS) {
    command.option(`--${kebab(f)} <${CONFIG_FIELD_KINDS[f] === 'number' ? 'n' : 'value'}>`, `worker config ${f} (env ${CONFIG_ENV[f]})`);
  }
  command.option('--kafka <key=value>', 'librdkafka option for every client, repeatable (env ONCEFLOW_KAFKA_<NAME>)', (v: string, prev: string[] = []) => [...prev, v]);
  return command;
}

export interface ConfigCommandOptions extends ConfigFlags {
  readonly config?: string;
}

/** The flags part of what commander parsed with addConfigOptions. */
export function configFlagsFrom(opts: ConfigCommandOptions): ConfigFlags {
  const flags: Record<string, unknown> = {};
  for (const f of FLAG_FIELDS) if (opts[f] !== undefined) flags[f] = opts[f];
  if (opts.kafka !== undefined) flags.kafka = opts.kafka;
  return flags as ConfigFlags;
}

export interface PrintOptions {
  readonly format: 'yaml' | 'json';
  /** YAML only: a comment after each value saying which source set it. */
  readonly showOrigin?: boolean;
}

/** What `config print` shows for an app id no source sets and no topology file was given: `run` takes the topology's. */
export const TOPOLOGY_APP_ID = "(the topology's)";

/**
 * The effective configuration as `config print` shows it: validated, defaults applied, secrets replaced.
 * `topologyAppId` is the default app id, the topology's; without it an unset app id shows as TOPOLOGY_APP_ID.
 */
export function renderEffectiveConfig(sources: Parameters<typeof resolveConfigSources>[0], options: PrintOptions, topologyAppId?: string): { text: string; warnings: string[] } {
  const resolved = resolveConfigSources(sources);
  const appId = resolved.input.appId ?? topologyAppId;
  // Validated with a stand-in app id so that every other field is still checked; the stand-in is never shown.
  const parsed = parseWorkerConfig({ ...resolved.input, appId: appId ?? 'topology' });
  const config = redactDeep({ ...parsed, appId: appId ?? TOPOLOGY_APP_ID });
  const warnings = resolved.unknownEnv.map((n) => `ignored unknown environment variable ${n} (not an onceflow setting; a typo?)`);
  if (options.format === 'json') return { text: `${JSON.stringify(config, null, 2)}\n`, warnings };
  const doc = new Document(config);
  if (options.showOrigin) annotate(doc, resolved.origin);
  return { text: doc.toString(), warnings };
}

function annotate(doc: Document, origin: Readonly<Record<string, ConfigOrigin>>): void {
  if (!isMap(doc.contents)) return;
  const mark = (pair: Pair, path: string): void => {
    if (isScalar(pair.value)) pair.value.comment = ` ${origin[path] ?? 'default'}`;
  };
  for (const pair of doc.contents.items) {
    if (!isPair(pair) || !isScalar(pair.key)) continue;
    const key = String(pair.key.value);
    if (key === 'kafka' && isMap(pair.value)) {
      for (const inner of pair.value.items) if (isPair(inner) && isScalar(inner.key)) mark(inner, `kafka.${String(inner.key.value)}`);
    } else {
      mark(pair, key);
    }
  }
}

export interface CliIo {
  out(text: string): void;
  err(text: string): void;
}
const stdio: CliIo = { out: (t) => process.stdout.write(t), err: (t) => process.stderr.write(t) };

export function registerConfig(program: Command, io: CliIo = stdio): void {
  const config = defineCommand(program, 'config');
  const print = config
    .command('print [topology]')
    .description('print the effective configuration (flags > env > file > `dev up` cluster > defaults), secrets redacted; the app id defaults to the topology file\'s')
    .option('--format <format>', 'yaml | json', 'yaml')
    .option('--show-origin', 'YAML: comment each value with the source that set it');
  addConfigOptions(print);
  print.action(async (topology: string | undefined, opts: ConfigCommandOptions & { format: string; showOrigin?: boolean }) => {
    const format = opts.format === 'json' ? 'json' : opts.format === 'yaml' ? 'yaml' : undefined;
    if (!format) {
      print.error(`error: --format must be yaml or json, got ${JSON.stringify(opts.format)}`);
      return;
    }
    const dev = devConnection();
    const topologyAppId = topology === undefined ? undefined : (await loadTopology(topology)).options.appId;
    const { text, warnings } = renderEffectiveConfig(
      { ...(opts.config !== undefined ? { file: opts.config } : {}), env: process.env, flags: configFlagsFrom(opts), ...(dev ? { devCluster: dev } : {}) },
      { format, showOrigin: opts.showOrigin ?? false },
      topologyAppId,
    );
    for (const w of warnings) io.err(`onceflow: warning: ${w}\n`);
    io.out(text);
  });
}
