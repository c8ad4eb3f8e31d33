import { producerMessageMaxBytes, RecordSizeLimits } from '../../core/record-size.ts';
import type { ClientOptions } from '../../kafka/admin.ts';
import type { ClientSupplier } from './client-supplier.ts';

export interface LearntRecordLimits {
  readonly limits: RecordSizeLimits;
  /** Why the topics' max.message.bytes are not known (only the producer's limit is then checked); undefined when they are. */
  readonly unknown?: string;
}

/**
 * The producer's message.max.bytes (from `kafka`) and each topic's max.message.bytes as the broker
 * applies it: the limits a record produced to `topics` meets. Used by the worker at start and by
 * `onceflow produce` before it sends anything. Where the topics' limits cannot be read (a secured
 * listener, no answer), `unknown` says why and only the producer's limit is in `limits`.
 */
export async function readRecordSizeLimits(clients: Pick<ClientSupplier, 'topicMaxMessageBytes'>, bootstrap: string, topics: readonly string[], kafka: ClientOptions): Promise<LearntRecordLimits> {
  const messageMaxBytes = producerMessageMaxBytes(kafka);
  let described: ReadonlyMap<string, number> = new Map();
  let unknown: string | undefined;
  try {
    if (clients.topicMaxMessageBytes === undefined) unknown = 'the client supplier cannot describe topic configs';
    else described = await clients.topicMaxMessageBytes(bootstrap, topics, kafka);
    if (unknown === undefined && described.size === 0 && topics.length > 0) unknown = `not described (security.protocol ${String(kafka['security.protocol'])})`;
  } catch (e) {
    unknown = e instanceof Error ? e.message : String(e);
  }
  return { limits: new RecordSizeLimits(messageMaxBytes, described), ...(unknown === undefined ? {} : { unknown }) };
}
