import type { Command } from 'commander';
import { defineCommand } from './commands.ts';
import type { ClientOptions } from '../kafka/admin.ts';
import { addClientOptions } from './client-options.ts';
import { connect, type Connection, type ConnectionFlags } from './connection.ts';
import { listDeadLetters, parseWhere, replayDeadLetters, type DeadLetterEntry } from '../dlq/dead-letters.ts';

export interface DlqOptions extends ConnectionFlags {
  appId: string;
  topic?: string;
  where?: string[];
  json?: boolean;
  to?: string;
  dryRun?: boolean;
}

const collect = (v: string, prev: string[] = []) => [...prev, v];

function common(cmd: Command): Command {
  return addClientOptions(cmd
    .requiredOption('--app-id <id>', 'the application whose dead letters to read')
    .option('--topic <topic>', 'the dead-letter topic (default <app-id>-dlq)')
    .option('--where <field=value>', 'filter: code=..., stage=..., topic=... (repeatable)', collect)
    .option('--json', 'print JSON'));
}

export interface DlqTarget {
  readonly bootstrap: string;
  readonly dlqTopic: string;
  readonly clientOptions: ClientOptions;
}

/** What every client of `dlq list`/`replay` is given: the connection's address and client options. */
export function dlqTarget(opts: Pick<DlqOptions, 'appId' | 'topic'>, connection: Pick<Connection, 'bootstrap' | 'clientOptions'>): DlqTarget {
  return { bootstrap: connection.bootstrap, dlqTopic: opts.topic ?? `${opts.appId}-dlq`, clientOptions: connection.clientOptions };
}

const target = async (opts: DlqOptions): Promise<DlqTarget> => dlqTarget(opts, await connect(opts));

const row = (e: DeadLetterEntry) => ({
  dlq: e.id,
  source: `${e.sourceTopic}/${e.sourcePartition}/${e.sourceOffset}`,
  stage: e.stage,
  code: e.code,
  attempts: e.attempts,
  failures: e.failures,
  time: e.time,
  key: e.key?.toString() ?? '',
  message: e.message.length > 70 ? `${e.message.slice(0, 67)}...` : e.message,
});

/** An excerpt republished would pass for the record: the user reads the whole one from its source. */
function excerptSkipped(e: DeadLetterEntry): string {
  return `skipped ${e.id}: it holds only an excerpt of a ${e.excerpt?.valueBytes ?? '?'}-byte value (${e.code}); the whole record is at ${e.sourceTopic}/${e.sourcePartition}/${e.sourceOffset} until that topic's retention drops it`;
}

function table(rows: Record<string, string | number>[]): string {
  if (rows.length === 0) return '(no dead letters)';
  const cols = Object.keys(rows[0]!);
  const width = cols.map((c) => Math.max(c.length, ...rows.map((r) => String(r[c]).length)));
  const line = (cells: string[]) => cells.map((c, i) => c.padEnd(width[i]!)).join('  ').trimEnd();
  return [line(cols), line(width.map((w) => '-'.repeat(w))), ...rows.map((r) => line(cols.map((c) => String(r[c]))))].join('\n');
}

export function registerDlq(program: Command): void {
  const dlq = defineCommand(program, 'dlq');
  common(dlq.command('list').description('show dead-lettered records with their errors')).action(async (opts: DlqOptions) => {
    const { bootstrap, dlqTopic, clientOptions } = await target(opts);
    const entries = await listDeadLetters(bootstrap, dlqTopic, parseWhere(opts.where ?? []), clientOptions);
    console.log(opts.json ? JSON.stringify(entries.map((e) => ({ ...row(e), message: e.message, value: e.value?.toString('base64') ?? null })), null, 2) : table(entries.map(row)));
  });
  common(dlq.command('replay').description('re-publish selected dead letters to their source topic (or --to), once'))
    .option('--to <topic>', 'publish to this topic instead of each record\'s source topic')
    .option('--dry-run', 'say what would be replayed, publish nothing')
    .action(async (opts: DlqOptions) => {
      const dryRun = opts.dryRun === true;
      const result = await replayDeadLetters({ ...(await target(opts)), filter: parseWhere(opts.where ?? []), dryRun, ...(opts.to ? { to: opts.to } : {}) });
      if (opts.json) console.log(JSON.stringify({ dryRun, replayed: result.replayed.map((e) => e.id), skipped: result.skipped.map((e) => e.id), excerpts: result.excerpts.map((e) => e.id) }));
      else {
        console.log(`${dryRun ? 'would replay' : 'replayed'} ${result.replayed.length} record(s)${result.skipped.length ? `, skipped ${result.skipped.length} replayed before` : ''}${result.replayed.length ? `: ${result.replayed.map((e) => e.id).join(', ')}` : ''}`);
        for (const e of result.excerpts) console.log(excerptSkipped(e));
      }
    });
}
