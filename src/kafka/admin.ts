import { KafkaJS } from '@confluentinc/kafka-javascript';
import { OnceflowError } from '../errors.ts';

export class TopicError extends OnceflowError {
  constructor(
    readonly code: 'TOPIC_MISSING' | 'TOPIC_CREATE_FAILED',
    message: string,
    readonly topics: readonly string[],
  ) {
    super(message);
  }
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

export function createAdmin(bootstrap: string, extra: ClientOptions = {}): AdminClient {
  const kafka = new KafkaJS.Kafka({ 'bootstrap.servers': bootstrap, 'log_level': 0, ...extra } as KafkaJS.CommonConstructorConfig);
  return kafka.admin();
}

export async function withAdmin<T>(bootstrap: string, fn: (admin: AdminClient) => Promise<T>, extra: ClientOptions = {}): Promise<T> {
  const admin = createAdmin(bootstrap, extra);
  await admin.connect();
  try {
    return await fn(admin);
  } finally {
    await admin.disconnect();
  }
}

/** True when the broker answers a metadata request. */
export async function pingBroker(bootstrap: string): Promise<boolean> {
  return withAdmin(bootstrap, async (admin) => {
    await admin.listTopics({ timeout: 2000 });
    return true;
  });
}

/** Creates what is missing; topics that already exist are left as they are. */
export async function ensureTopics(admin: AdminClient, specs: readonly TopicSpec[]): Promise<void> {
  if (specs.length === 0) return;
  const existing = new Set(await admin.listTopics());
  const missing = specs.filter((s) => !existing.has(s.name));
  if (missing.length === 0) return;
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
    // Another replica may have created them between our list and create; its metadata can take a moment to show.
    let still: string[] = [];
    for (let attempt = 0; attempt < 20; attempt++) {
      const now = new Set(await admin.listTopics());
      still = missing.filter((s) => !now.has(s.name)).map((s) => s.name);
      if (still.length === 0) return;
      await new Promise((r) => setTimeout(r, 250));
    }
    throw new TopicError('TOPIC_CREATE_FAILED', `could not create topics ${still.join(', ')}: ${(e as Error).message}`, still);
  }
}

/** Partition count of each topic; throws naming every topic that does not exist. */
export async function partitionCounts(admin: AdminClient, topics: readonly string[]): Promise<Map<string, number>> {
  const existing = new Set(await admin.listTopics());
  const missing = topics.filter((t) => !existing.has(t));
  if (missing.length > 0) {
    throw new TopicError('TOPIC_MISSING', `source topic${missing.length > 1 ? 's' : ''} missing: ${missing.join(', ')} (create ${missing.length > 1 ? 'them' : 'it'} before starting the application)`, missing);
  }
  const meta = await admin.fetchTopicMetadata({ topics: [...topics] });
  return new Map(meta.map((m) => [m.name, m.partitions.length]));
}
