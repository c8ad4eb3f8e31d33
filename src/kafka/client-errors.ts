import type { LibrdKafkaError } from '@confluentinc/kafka-javascript';

// Apart from clients.ts, which loads the client's native binding: the CLI's error report needs only these.

export function isKafkaError(e: unknown): e is LibrdKafkaError {
  return typeof e === 'object' && e !== null && typeof (e as { code?: unknown }).code === 'number' && 'origin' in e;
}

/** An error the Kafka client raised (node-rdkafka style or its KafkaJS layer): a numeric code, often a librdkafka type name. */
export function isClientError(e: unknown): e is Error & { readonly code: number; readonly type?: string } {
  return e instanceof Error && typeof (e as { code?: unknown }).code === 'number' && (isKafkaError(e) || e.name.startsWith('KafkaJS'));
}
