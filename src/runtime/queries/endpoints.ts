import { ensureTopics, type AdminClient, type ClientOptions } from '../../kafka/admin.ts';
import { produceRecords } from '../../kafka/produce-records.ts';
import { readTopic } from '../../kafka/read-topic.ts';
import { describeGroup } from '../../kafka/groups.ts';

/**
 * How the members of an application learn each other's HTTP address (`--advertised-url`), for
 * interactive queries.
 *
 * Kafka Streams puts it in the consumer group's member metadata (the assignor's userData). The Kafka
 * client onceflow uses cannot: librdkafka's built-in assignors send no user data, and the binding
 * reports a member's metadata as null. So each member writes its URL to a compacted topic of the
 * application, `<appId>-endpoints` (one partition, keyed by the member's client id), when it starts;
 * who owns which partition comes from the group coordinator itself (DescribeGroups), the only
 * source that is current during and after a rebalance. An URL changes only when a replica restarts
 * with another address, and then it writes its new one; the compacted topic keeps the latest per replica.
 */
export const endpointsTopic = (appId: string): string => `${appId}-endpoints`;

export interface MemberEndpoint {
  /** The member's consumer client id: `<appId>-<instanceId>` (its transactional id) unless kafka `client.id` overrides it. */
  readonly clientId: string;
  readonly instanceId: string;
  /** What it advertised, e.g. `http://10.0.0.7:9464`; undefined when it advertised none. */
  readonly url: string | undefined;
  /** The host the coordinator saw the member connect from. */
  readonly host: string;
  /** `<topic>-<partition>` it is assigned. */
  readonly partitions: readonly string[];
}

interface EndpointRecord {
  readonly clientId: string;
  readonly instanceId: string;
  readonly url: string;
  readonly at: number;
}

export interface ConnectionOptions {
  readonly bootstrap: string;
  readonly kafka: ClientOptions;
  readonly withAdmin: <T>(bootstrap: string, fn: (admin: AdminClient) => Promise<T>, kafka: ClientOptions) => Promise<T>;
}

/** Creates the endpoints topic if need be and writes this member's URL to it. */
export async function publishEndpoint(conn: ConnectionOptions, appId: string, endpoint: Omit<EndpointRecord, 'at'>): Promise<void> {
  const topic = endpointsTopic(appId);
  await conn.withAdmin(conn.bootstrap, (admin) => ensureTopics(admin, [{ name: topic, partitions: 1, compact: true }]), conn.kafka);
  const record: EndpointRecord = { ...endpoint, at: Date.now() };
  await produceRecords(conn.bootstrap, topic, [{ key: Buffer.from(endpoint.clientId), value: Buffer.from(JSON.stringify(record)) }], { ...conn.kafka });
}

/** The latest URL each member advertised, by client id; empty when no member advertised one (the topic does not exist). */
export async function readEndpoints(conn: ConnectionOptions, appId: string): Promise<Map<string, EndpointRecord>> {
  const topic = endpointsTopic(appId);
  const exists = await conn.withAdmin(conn.bootstrap, async (admin) => (await admin.listTopics({ timeout: 10_000 })).includes(topic), conn.kafka);
  const out = new Map<string, EndpointRecord>();
  if (!exists) return out;
  for (const r of await readTopic(conn.bootstrap, topic, { clientOptions: conn.kafka, idleMs: 10_000 })) {
    if (r.value === null) continue;
    try {
      const e = JSON.parse(r.value.toString('utf8')) as EndpointRecord;
      if (typeof e.clientId === 'string' && typeof e.url === 'string') out.set(e.clientId, e);
    } catch {
      // Not one of ours: the topic is the application's, but anyone with write access could add to it.
    }
  }
  return out;
}

/** The group's members with what each is assigned, as its coordinator knows them now; empty for a group with no members. */
export async function describeMembers(admin: AdminClient, groupId: string): Promise<{ state: number; members: Omit<MemberEndpoint, 'url' | 'instanceId'>[] }> {
  const group = await describeGroup(admin, groupId);
  return {
    state: group?.state ?? 0,
    members: (group?.members ?? []).map((m) => ({
      clientId: m.clientId,
      host: m.clientHost.replace(/^\//, ''),
      partitions: (m.assignment?.topicPartitions ?? []).map((tp) => `${tp.topic}-${tp.partition}`),
    })),
  };
}

/** Members joined with the URLs they advertised. */
export async function groupEndpoints(conn: ConnectionOptions, appId: string): Promise<MemberEndpoint[]> {
  const [{ members }, urls] = await Promise.all([conn.withAdmin(conn.bootstrap, (admin) => describeMembers(admin, appId), conn.kafka), readEndpoints(conn, appId)]);
  return members.map((m) => {
    const e = urls.get(m.clientId);
    return { ...m, instanceId: e?.instanceId ?? m.clientId.replace(`${appId}-`, ''), url: e?.url };
  });
}
