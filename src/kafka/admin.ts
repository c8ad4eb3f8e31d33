import { KafkaJS } from '@confluentinc/kafka-javascript';
import { setTimeout as sleep } from 'node:timers/promises';
import { OnceflowError } from '../errors.ts';
import { ERR } from './clients.ts';

export class TopicError extends OnceflowError {
  constructor(
    readonly code: 'TOPIC_MISSING' | 'TOPIC_CREATE_FAILED' | 'TOPIC_DELETE_FAILED',
    message: string,
    readonly topics: readonly string[],
  ) {
    super(message);
  }
}

/**
 * Topics the client's principal may not DESCRIBE: Kafka then answers "not authorized" whether or not
 * they exist, and leaves them out of every listing, so they must not be reported as missing.
 */
export class TopicAuthorizationError extends OnceflowError {
  readonly code = 'TOPIC_NOT_AUTHORIZED';
  constructor(
    message: string,
    readonly topics: readonly string[],
    readonly principal: string | undefined,
  ) {
    super(message);
  }
}

/** Wrong SASL credentials: said at once, instead of the timeouts and transport errors librdkafka reports for it. */
export class KafkaAuthenticationError extends OnceflowError {
  readonly code = 'AUTHENTICATION_FAILED';
}

export interface TopicSpec {
  readonly name: string;
  readonly partitions: number;
  readonly compact?: boolean;
  readonly config?: Readonly<Record<string, string>>;
}

export type AdminClient = KafkaJS.Admin;

/** librdkafka options (dotted names) shared by every client of one application. */
export type ClientOptions = Readonly<Record<string, string | number | boolean>>;

/** librdkafka reports a failed SASL handshake only as an error log line (hence log_level 3, into createAdmin's logger); the call itself fails later as a transport error. */
const SASL_FAILURE = /SASL authentication error[^\n]*/;

export function createAdmin(bootstrap: string, extra: ClientOptions = {}, onError?: (message: string) => void): AdminClient {
  // Log events cross from librdkafka's threads into JS; with short-lived admin clients that was seen to crash
  // the process (SIGSEGV) when a client was torn down, so they are switched on only where SASL needs them.
  const sasl = Object.keys(extra).some((k) => k.startsWith('sasl.'));
  if (!sasl || !onError) {
    return new KafkaJS.Kafka({ 'bootstrap.servers': bootstrap, 'log_level': 0, ...extra } as KafkaJS.CommonConstructorConfig).admin();
  }
  const quiet = () => undefined;
  const logger = { info: quiet, debug: quiet, warn: quiet, error: (message: string) => onError(message), namespace: () => logger, setLogLevel: quiet };
  // The typings demand `brokers` inside kafkaJS, but the binding takes librdkafka's bootstrap.servers beside it.
  const kafka = new KafkaJS.Kafka({ kafkaJS: { logger }, 'bootstrap.servers': bootstrap, 'log_level': 3, ...extra } as unknown as KafkaJS.CommonConstructorConfig);
  return kafka.admin();
}

export async function withAdmin<T>(bootstrap: string, fn: (admin: AdminClient) => Promise<T>, extra: ClientOptions = {}): Promise<T> {
  let saslFailure: string | undefined;
  const admin = createAdmin(bootstrap, extra, (message) => (saslFailure ??= SASL_FAILURE.exec(message)?.[0]));
  try {
    await admin.connect();
    return await fn(admin);
  } catch (e) {
    if (saslFailure === undefined) throw e;
    // Names the user and mechanism, never the password (the broker's text does not carry it either).
    throw new KafkaAuthenticationError(`could not authenticate to ${bootstrap} as user "${String(extra['sasl.username'] ?? '')}" with ${String(extra['sasl.mechanisms'] ?? extra['sasl.mechanism'] ?? 'SASL')}: ${saslFailure} (check sasl.username and sasl.password)`, { cause: e });
  } finally {
    await admin.disconnect().catch(() => undefined);
  }
}

/** True when the broker answers a metadata request. */
export async function pingBroker(bootstrap: string, extra: ClientOptions = {}): Promise<boolean> {
  return withAdmin(
    bootstrap,
    async (admin) => {
      await admin.listTopics({ timeout: 2000 });
      return true;
    },
    extra,
  );
}

/**
 * Metadata answers worth asking again: a broker away or slow, or one whose metadata lags the controller.
 * On a three-node cluster a node restarted or a topic created a moment ago is answered "unknown topic" by
 * some nodes for a while; on a loaded machine a fresh client's first request can time out although the
 * broker is up. A CLI or a starting worker should not die of either.
 */
const METADATA_RETRIABLE = new Set([ERR.ERR__TRANSPORT, ERR.ERR__TIMED_OUT, ERR.ERR_UNKNOWN_TOPIC_OR_PART, ERR.ERR_LEADER_NOT_AVAILABLE, ERR.ERR_NOT_LEADER_FOR_PARTITION]);

async function askAgainWhileRetriable<T>(ask: () => Promise<T>, budgetMs = 30_000): Promise<T> {
  const deadline = Date.now() + budgetMs;
  for (let attempt = 1; ; attempt++) {
    try {
      return await ask();
    } catch (e) {
      const code = (e as { code?: unknown }).code;
      const pause = Math.min(2_000, 250 * attempt);
      if (typeof code !== 'number' || !METADATA_RETRIABLE.has(code) || Date.now() + pause > deadline) throw e;
      await sleep(pause);
    }
  }
}

async function listTopics(admin: AdminClient): Promise<string[]> {
  return askAgainWhileRetriable(() => admin.listTopics({ timeout: 10_000 }));
}

/** Creates what is missing; topics that already exist are left as they are. Returns the names of those it found missing. */
export async function ensureTopics(admin: AdminClient, specs: readonly TopicSpec[]): Promise<string[]> {
  if (specs.length === 0) return [];
  const existing = new Set(await listTopics(admin));
  const missing = specs.filter((s) => !existing.has(s.name));
  if (missing.length === 0) return [];
  let failure: unknown;
  try {
    await admin.createTopics({
      topics: missing.map((s) => ({
        topic: s.name,
        numPartitions: s.partitions,
        replicationFactor: -1,
        configEntries: Object.entries({ ...(s.compact ? { 'cleanup.policy': 'compact' } : {}), ...s.config }).map(([name, value]) => ({ name, value })),
      })),
    });
  } catch (e) {
    // Another replica may have created them between our list and create.
    failure = e;
  }
  // Either way, return only once the metadata lists them: the caller's next client (a reader, a
  // worker) asks at once, and a topic created a moment ago can still be missing from its answer.
  let still: string[] = [];
  for (let attempt = 0; attempt < 40; attempt++) {
    const now = new Set(await listTopics(admin));
    still = missing.filter((s) => !now.has(s.name)).map((s) => s.name);
    if (still.length === 0) return missing.map((s) => s.name);
    await new Promise((r) => setTimeout(r, 250));
  }
  const why = failure === undefined ? 'created, but still not listed after 10 s' : (failure as Error).message;
  throw new TopicError('TOPIC_CREATE_FAILED', `could not create topics ${still.join(', ')}: ${why}`, still);
}

/** The Kafka principal of a SASL client (`User:<sasl.username>`); undefined for others (a TLS client's comes from its certificate). */
export function principalOf(clientOptions: ClientOptions): string | undefined {
  const user = clientOptions['sasl.username'];
  return user === undefined || user === '' ? undefined : `User:${String(user)}`;
}

/** What each role needs on its topics, as `onceflow acls` prints it (READ and WRITE include DESCRIBE). */
const ROLE_OPERATIONS = { source: ['READ'], output: ['WRITE', 'DESCRIBE'] } as const;

/** The topics among `unlisted` whose metadata the broker refuses (TOPIC_AUTHORIZATION_FAILED) rather than does not know. */
async function unauthorizedAmong(admin: AdminClient, unlisted: readonly string[]): Promise<string[]> {
  const hidden: string[] = [];
  // One topic a request: the client fails a whole request on its first topic error.
  for (const topic of unlisted) {
    const code = await admin.fetchTopicMetadata({ topics: [topic] }).then(() => undefined, (e: unknown) => (e as { code?: unknown }).code);
    if (code === ERR.ERR_TOPIC_AUTHORIZATION_FAILED) hidden.push(topic);
  }
  return hidden;
}

function authorizationError(role: keyof typeof ROLE_OPERATIONS, topics: readonly string[], principal: string | undefined): TopicAuthorizationError {
  const who = principal ?? "the client's principal";
  const acls = topics.flatMap((t) => ROLE_OPERATIONS[role].map((op) => `${principal ?? 'User:<name>'} ${op} TOPIC LITERAL ${t}`));
  return new TopicAuthorizationError(
    `${who} may not DESCRIBE ${role} topic${topics.length > 1 ? 's' : ''} ${topics.join(', ')} (Kafka answers "not authorized" whether or not a topic exists): add the ACL${acls.length > 1 ? 's' : ''} ${acls.map((a) => `\`${a}\``).join(', ')}. \`onceflow acls <topology> --principal ${principal ?? 'User:<name>'}\` prints every ACL the application needs; \`onceflow dev grant\` adds them to a \`dev up --secure\` cluster.`,
    topics,
    principal,
  );
}

/**
 * Throws naming every missing topic of the first role that has one (sources before outputs); one
 * listing serves every role. A topic the listing leaves out because the principal (from
 * `clientOptions`) may not see it is an authorization error, not a missing topic.
 */
export async function requireTopics(admin: AdminClient, needed: Readonly<Partial<Record<'source' | 'output', readonly string[]>>>, clientOptions: ClientOptions = {}): Promise<void> {
  const roles = (['source', 'output'] as const).filter((role) => (needed[role]?.length ?? 0) > 0);
  if (roles.length === 0) return;
  const existing = new Set(await listTopics(admin));
  for (const role of roles) {
    const unlisted = (needed[role] ?? []).filter((t) => !existing.has(t));
    if (unlisted.length === 0) continue;
    const hidden = await unauthorizedAmong(admin, unlisted);
    if (hidden.length > 0) throw authorizationError(role, hidden, principalOf(clientOptions));
    throw new TopicError('TOPIC_MISSING', `${role} topic${unlisted.length > 1 ? 's' : ''} missing: ${unlisted.join(', ')} (create ${unlisted.length > 1 ? 'them' : 'it'} before starting the application)`, unlisted);
  }
}

/** Partition counts of topics known to exist (see requireTopics) (a lagging node's "unknown topic" is asked again). */
export async function fetchPartitionCounts(admin: AdminClient, topics: readonly string[]): Promise<Map<string, number>> {
  const meta = await askAgainWhileRetriable(() => admin.fetchTopicMetadata({ topics: [...topics] }));
  return new Map(meta.map((m) => [m.name, m.partitions.length]));
}

/** Partition count of each topic; throws naming every topic that does not exist. */
export async function partitionCounts(admin: AdminClient, topics: readonly string[], clientOptions: ClientOptions = {}): Promise<Map<string, number>> {
  await requireTopics(admin, { source: topics }, clientOptions);
  return fetchPartitionCounts(admin, topics);
}

/** Deletes the topics that exist and returns once the metadata no longer lists them (a reader asking at once would still see them). */
export async function deleteTopicsAndWait(admin: AdminClient, names: readonly string[]): Promise<void> {
  if (names.length === 0) return;
  await admin.deleteTopics({ topics: [...names], timeout: 30_000 });
  for (let attempt = 0; attempt < 40; attempt++) {
    const listed = new Set(await listTopics(admin));
    if (!names.some((n) => listed.has(n))) return;
    await sleep(250);
  }
  throw new TopicError('TOPIC_DELETE_FAILED', `deleted topics ${names.join(', ')}, but the metadata still lists them after 10 s`, names);
}
