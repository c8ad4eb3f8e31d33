import { pino, type Logger } from 'pino';
import type { Transition, WorkerEvent } from '../runtime/base/worker-events.ts';
import { redactDeep, scrub, secretValues } from './redact.ts';
import type { ObservedWorker } from './worker-view.ts';

export type LogLevel = 'trace' | 'debug' | 'info' | 'warn' | 'error' | 'fatal' | 'silent';
export const LOG_LEVELS: readonly LogLevel[] = ['trace', 'debug', 'info', 'warn', 'error', 'fatal', 'silent'];

export interface LogSink {
  write(line: string): unknown;
}

export interface LoggerOptions {
  /** Human-readable lines for a terminal instead of JSON. */
  readonly pretty?: boolean;
  readonly level?: LogLevel;
  /** Default: stdout. */
  readonly destination?: LogSink;
  /** Values scrubbed from every line, whatever field they end up in. attachLogging adds the worker's own. */
  readonly secrets?: Iterable<string>;
}

export type { Logger };

/** The scrub list of each root logger; children share their parent's destination and so its list. */
const secretsOf = new WeakMap<Logger, Set<string>>();

const LEVEL_NAMES: Readonly<Record<number, string>> = { 10: 'TRACE', 20: 'DEBUG', 30: 'INFO', 40: 'WARN', 50: 'ERROR', 60: 'FATAL' };

/**
 * A pino logger whose lines carry no credentials: keys matching SECRET_OPTION are replaced at any
 * depth before serialisation, and known secret values are scrubbed from the finished line
 * (messages and error texts included) before it is written.
 */
export function createLogger(options: LoggerOptions = {}): Logger {
  const secrets = new Set<string>(options.secrets ?? []);
  const out = options.destination ?? process.stdout;
  const pretty = options.pretty ?? false;
  const sink = {
    write(line: string): void {
      const clean = scrub(line, secrets);
      out.write(pretty ? formatPretty(clean) : clean);
    },
  };
  const logger = pino(
    {
      level: options.level ?? 'info',
      timestamp: pino.stdTimeFunctions.isoTime,
      formatters: {
        level: (label) => ({ level: label }),
        log: (obj) => redactDeep(obj),
      },
    },
    sink,
  );
  secretsOf.set(logger, secrets);
  return logger;
}

/** Adds values to a createLogger logger's scrub list; a logger from elsewhere only gets key-based redaction. */
export function addLogSecrets(logger: Logger, values: Iterable<string>): void {
  const set = secretsOf.get(logger);
  if (!set) return;
  for (const v of values) if (v.length > 0) set.add(v);
}

const RESERVED = new Set(['time', 'level', 'msg', 'pid', 'hostname']);

/** `12:00:01.234 INFO  partitions assigned  event=assigned app=orders …`: one line, no dependency on pino-pretty. */
export function formatPretty(jsonLine: string): string {
  let rec: Record<string, unknown>;
  try {
    rec = JSON.parse(jsonLine) as Record<string, unknown>;
  } catch {
    return jsonLine;
  }
  const time = typeof rec.time === 'string' ? rec.time.slice(11, 23) : '';
  const level = typeof rec.level === 'number' ? (LEVEL_NAMES[rec.level] ?? String(rec.level)) : String(rec.level ?? '').toUpperCase();
  const fields: string[] = [];
  let stack: string | undefined;
  for (const [k, v] of Object.entries(rec)) {
    if (RESERVED.has(k)) continue;
    if (k === 'err' && v && typeof v === 'object') {
      const err = v as { message?: unknown; code?: unknown; stack?: unknown };
      fields.push(`err=${err.code ? `[${String(err.code)}] ` : ''}${String(err.message ?? '')}`);
      if (typeof err.stack === 'string') stack = err.stack;
      continue;
    }
    fields.push(`${k}=${typeof v === 'string' ? (/\s/.test(v) ? JSON.stringify(v) : v) : JSON.stringify(v)}`);
  }
  const head = `${time} ${level.padEnd(5)} ${String(rec.msg ?? '')}`;
  return `${head}${fields.length > 0 ? `  ${fields.join(' ')}` : ''}\n${stack ? `${stack.split('\n').slice(1).join('\n')}\n` : ''}`;
}

export interface LoggingOptions {
  /** Dead-lettered records are logged one by one only at debug; at warn, a summary at most this often (default 10 s). */
  readonly dlqSummaryMs?: number;
}

export interface AttachedLogging {
  readonly logger: Logger;
  /** Writes the pending summaries (dead letters, late records) now. */
  flush(): void;
  detach(): void;
}

/**
 * One line per lifecycle event, each bound to app id, instance id and transactional id. Per-transaction
 * (`committed`) and per-record (`dead-lettered`) events stay at debug so info volume does not grow with throughput.
 */
export function attachLogging(worker: ObservedWorker, root: Logger, options: LoggingOptions = {}): AttachedLogging {
  addLogSecrets(root, secretValues(worker.config));
  const log = root.child({ app: worker.config.appId, instance: worker.config.instanceId, transactionalId: worker.transactionalId });
  const summaryMs = options.dlqSummaryMs ?? 10_000;
  const pendingDlq = new Map<string, number>();
  let pendingTotal = 0;
  let lastSummaryAt = Number.NEGATIVE_INFINITY;

  const flush = (): void => {
    if (pendingTotal === 0) return;
    lastSummaryAt = Date.now();
    const byStageAndCode = Object.fromEntries(pendingDlq);
    log.warn({ event: 'dead-lettered', records: pendingTotal, byStageAndCode }, `${pendingTotal} record(s) sent to dead-letter topics`);
    pendingDlq.clear();
    pendingTotal = 0;
  };
  // Late records, per store: the first after a quiet period at once, the rest of a backlog summed up by the timer.
  const pendingLate = new Map<string, { stage: string; records: number; maxLateByMs: number }>();
  let lastLateAt = Number.NEGATIVE_INFINITY;
  const flushLate = (): void => {
    if (pendingLate.size === 0) return;
    lastLateAt = Date.now();
    for (const [store, late] of pendingLate) {
      log.warn(
        { event: 'late-record', store, stage: late.stage, records: late.records, maxLateByMs: late.maxLateByMs },
        `${late.records} late record(s) dropped by ${late.stage}: up to ${late.maxLateByMs} ms past the grace period of store ${store}`,
      );
    }
    pendingLate.clear();
  };
  const timer = setInterval(() => {
    flush();
    flushLate();
  }, summaryMs);
  timer.unref();

  const onEvent = (e: WorkerEvent): void => {
    switch (e.type) {
      case 'started':
        log.info({ event: e.type, guarantee: worker.config.guarantee, config: worker.config }, 'worker started');
        break;
      case 'assigned':
        log.info({ event: e.type, partitions: e.partitions, count: e.partitions.length }, 'partitions assigned');
        break;
      case 'revoked':
        (e.lost ? log.warn.bind(log) : log.info.bind(log))({ event: e.type, partitions: e.partitions, lost: e.lost }, e.lost ? 'partitions lost' : 'partitions revoked');
        break;
      case 'restored':
        log.info({ event: e.type, records: e.records, ms: e.ms, fromCheckpoint: e.fromCheckpoint ?? 0 }, 'state restored');
        break;
      case 'table-record-not-restored':
        log.warn(
          { event: e.type, store: e.store, topic: e.topic, partition: e.partition, offset: e.offset, code: e.code },
          `store ${e.store}: not restored ${e.topic}/${e.partition}/${e.offset}, which its serdes do not decode (${e.code}: ${e.message}); it was dead-lettered when processed, and the key keeps its previous row`,
        );
        break;
      case 'committed':
        log.debug({ event: e.type, records: e.records, ms: e.ms }, 'transaction committed');
        break;
      case 'aborted':
        log.warn({ event: e.type, reason: e.reason }, 'transaction aborted');
        break;
      case 'fenced':
        log.warn({ event: e.type, reason: e.reason }, 'producer fenced');
        break;
      case 'producer-retry':
        log.warn({ event: e.type, call: e.call, attempt: e.attempt, reason: e.reason }, 'the producer retries a call: its coordinator is busy or away');
        break;
      case 'loop-stalled':
        log.warn({ event: e.type, step: e.step, forMs: e.forMs }, `the worker loop has been in one step for ${Math.round(e.forMs / 1000)} s`);
        break;
      case 'seek-failed':
        log.warn({ event: e.type, partition: e.partition, reason: e.reason }, 'seek to the committed offset failed: the partition waits');
        break;
      case 'dead-lettered': {
        log.debug({ event: e.type, stage: e.stage, code: e.code, topic: e.topic, partition: e.partition, offset: e.offset }, 'record dead-lettered');
        const key = `${e.stage}/${e.code}`;
        pendingDlq.set(key, (pendingDlq.get(key) ?? 0) + 1);
        pendingTotal++;
        // The first one after a quiet period is reported at once; the rest of a burst waits for the timer.
        if (Date.now() - lastSummaryAt >= summaryMs) flush();
        break;
      }
      case 'late-record': {
        const late = pendingLate.get(e.store) ?? { stage: e.stage, records: 0, maxLateByMs: 0 };
        late.records++;
        late.maxLateByMs = Math.max(late.maxLateByMs, e.lateByMs);
        pendingLate.set(e.store, late);
        if (Date.now() - lastLateAt >= summaryMs) flushLate();
        break;
      }
      case 'record-limits':
        if (e.unknown === undefined) log.info({ event: e.type, messageMaxBytes: e.messageMaxBytes, topicMaxMessageBytes: e.topicMaxMessageBytes }, 'record size limits');
        else log.warn({ event: e.type, messageMaxBytes: e.messageMaxBytes, reason: e.unknown }, "topics' max.message.bytes unknown: only the producer's limit is checked before produce");
        break;
      case 'processing-thread':
        if (e.off === undefined) log.info({ event: e.type, subtopologies: e.subtopologies, hosted: e.hosted, threads: e.threads }, 'sub-topologies run on processing threads');
        else if (e.failed === true) log.warn({ event: e.type, reason: e.off, restarted: e.restarted }, 'a processing thread died: its hosted tasks are restored from their changelogs on a live thread (or the main thread), its runs left to the others');
        else log.info({ event: e.type, reason: e.off }, 'every stage runs on the main thread');
        break;
      case 'standby':
        log.info({ event: e.type, tasks: e.tasks, adopted: e.adopted, dropped: e.dropped, released: e.released }, `standby tasks kept warm: ${e.tasks.length}`);
        break;
      case 'standby-failed':
        log.warn({ event: e.type, reason: e.reason }, 'a standby task is not kept warm; its task restores more when it moves here');
        break;
      case 'topic-config-corrected':
        log.warn({ event: e.type, topic: e.topic, setting: e.setting, from: e.from, to: e.to }, `internal topic ${e.topic}: ${e.setting} was ${e.from}, set to ${e.to}`);
        break;
      case 'topic-configs-unverified':
        log.warn({ event: e.type, topics: e.topics, reason: e.reason }, 'the configs of existing internal topics could not be checked: see docs/operations.md#internal-topics');
        break;
      case 'table-topic-not-compacted':
        log.warn({ event: e.type, topic: e.topic, cleanupPolicy: e.policy, fix: e.fix }, `table source topic ${e.topic} has cleanup.policy=${e.policy}: the broker's retention deletes rows a restore needs, and the table comes back incomplete. Fix: ${e.fix}`);
        break;
      case 'generated-name':
        log.warn({ event: e.type, what: e.what, name: e.name, stage: e.stage }, e.message);
        break;
      case 'topology-checked':
        log.info({ event: e.type, first: e.first, changes: e.changes }, e.first ? 'no topology recorded (a first deploy): this one is recorded' : `topology checked against the recorded one: ${e.changes.length} change(s), none left unresolved`);
        break;
      case 'store-reset':
        log.warn({ event: e.type, store: e.store, changelogs: e.changelogs, reason: e.reason }, `store ${e.store} reset (--reset-state) for: ${e.reason}`);
        break;
      case 'group-protocol':
        log.info({ event: e.type, protocol: e.protocol, assignor: e.assignor, reason: e.reason }, `consumer group protocol ${e.protocol}, assignor ${e.assignor}`);
        break;
      case 'group-session-timeout':
        if (e.applied) log.info({ event: e.type, requestedMs: e.requestedMs }, "the group's session timeout is sessionTimeoutMs");
        else log.warn({ event: e.type, requestedMs: e.requestedMs, reason: e.reason }, "the broker keeps its own session timeout for the group (its group.consumer.min.session.timeout.ms, 45 s by default, may be higher than sessionTimeoutMs): a dead worker's partitions wait that long: see docs/operations.md#rebalancing");
        break;
      case 'repartition-purged':
        log.debug({ event: e.type, partitions: e.partitions }, 'consumed repartition records deleted');
        break;
      case 'repartition-purge-failed':
        log.warn({ event: e.type, reason: e.reason }, 'repartition purge failed: retried at the next interval');
        break;
      case 'stopped':
        flush();
        flushLate();
        log.info({ event: e.type, ...(e.state === undefined ? {} : { state: e.state }) }, 'worker stopped');
        break;
      default:
        break;
    }
  };
  // Every move of the lifecycle and of the transaction: the protocol step by step, when debugging it.
  const onTransition = (t: Transition): void => log.debug({ machine: t.machine, from: t.from, to: t.to, call: t.call }, `${t.machine}: ${t.from} -> ${t.to}`);
  worker.on('event', onEvent);
  worker.on('transition', onTransition);
  return {
    logger: log,
    flush() {
      flush();
      flushLate();
    },
    detach() {
      worker.off('event', onEvent);
      worker.off('transition', onTransition);
      clearInterval(timer);
      flush();
      flushLate();
    },
  };
}
