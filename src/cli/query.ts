import type { Command } from 'commander';
import { defineCommand } from './commands.ts';
import { OnceflowError } from '../errors.ts';
import { withAdmin } from '../kafka/admin.ts';
import { parseWorkerConfig } from '../runtime/base/config.ts';
import { groupEndpoints } from '../runtime/queries/endpoints.ts';
import { queryAuthHeaders } from '../runtime/queries/query-auth-header.ts';
import { resolveConfigSources, type ConfigFlags } from './config-sources.ts';
import { bootstrapSource, devConnection, requireReachable } from './connection.ts';

export class QueryCommandError extends OnceflowError {
  constructor(
    readonly code: 'QUERY_NO_ENDPOINT' | 'QUERY_FAILED',
    message: string,
  ) {
    super(message);
  }
}

interface QueryFlags {
  readonly bootstrap?: string;
  readonly config?: string;
  readonly kafka?: string[];
  readonly stale?: boolean;
  readonly queryToken?: string;
}

/**
 * `onceflow query <app> <store> <key>`: asks any live replica that advertised an URL, with `?route=1`,
 * so the replica forwards the query to the key's owner. The CLI needs no topology file: the replica
 * knows the store's serdes and partitioning.
 */
export function registerQuery(program: Command, out: (text: string) => void = (t) => process.stdout.write(t)): void {
  defineCommand(program, 'query')
    .option('--bootstrap <servers>', 'Kafka bootstrap servers (env ONCEFLOW_BOOTSTRAP)')
    .option('--config <file>', 'YAML or JSON config file')
    .option('--kafka <key=value>', 'librdkafka option, repeatable', (v: string, prev: string[] = []) => [...prev, v])
    .option('--query-token <token>', "the app's queryToken, sent as Authorization: Bearer (env ONCEFLOW_QUERY_TOKEN)")
    .option('--stale', 'answer from a task whose restore is still running, with the state restored so far')
    .action(async (app: string, store: string, key: string, opts: QueryFlags) => {
      const flags: ConfigFlags = { appId: app, ...(opts.bootstrap !== undefined ? { bootstrap: opts.bootstrap } : {}), ...(opts.kafka !== undefined ? { kafka: opts.kafka } : {}), ...(opts.queryToken !== undefined ? { queryToken: opts.queryToken } : {}) };
      const dev = devConnection();
      const { input, origin } = resolveConfigSources({ ...(opts.config !== undefined ? { file: opts.config } : {}), env: process.env, flags, ...(dev ? { devCluster: dev } : {}) });
      const config = parseWorkerConfig(input);
      await requireReachable({ bootstrap: config.bootstrap, source: bootstrapSource(origin.bootstrap, dev), dev }, config.kafka);
      const members = await groupEndpoints({ bootstrap: config.bootstrap, kafka: config.kafka, withAdmin }, app);
      const urls = members.flatMap((m) => (m.url === undefined ? [] : [m.url]));
      if (urls.length === 0) {
        throw new QueryCommandError('QUERY_NO_ENDPOINT', members.length === 0 ? `application ${app} has no running replica` : `no replica of ${app} advertised an URL (start them with --advertised-url)`);
      }
      let lastError = '';
      for (const url of urls) {
        const target = new URL(`/metadata/${encodeURIComponent(store)}/${encodeURIComponent(key)}`, url);
        target.searchParams.set('route', '1');
        if (opts.stale) target.searchParams.set('stale', '1');
        try {
          const res = await fetch(target, { headers: queryAuthHeaders(config.queryToken), signal: AbortSignal.timeout(10_000) });
          out(`${JSON.stringify(await res.json(), null, 2)}\n`);
          // 404 (no such key) and 503 (restoring) are answers, not failures of the command's own; 401 (no or a wrong token) is one.
          if ((res.status >= 500 && res.status !== 503) || res.status === 401) process.exitCode = 1;
          else if (res.status === 503 || res.status === 404) process.exitCode = 2;
          return;
        } catch (e) {
          lastError = `${url}: ${e instanceof Error ? e.message : String(e)}`;
        }
      }
      throw new QueryCommandError('QUERY_FAILED', `no replica of ${app} answered (${lastError})`);
    });
}
