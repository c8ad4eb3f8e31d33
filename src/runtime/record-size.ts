// The size check lives in src/core because state/ (changelog records) runs it too. This path stays
// so that existing imports (worker.ts among them) keep working; new code imports src/core.
export * from '../core/record-size.ts';
import { DEFAULT_MESSAGE_MAX_BYTES } from '../core/record-size.ts';

/** The producer's `message.max.bytes` as the user configured it, or librdkafka's default. */
export function producerMessageMaxBytes(kafka: Readonly<Record<string, unknown>>): number {
  const configured = Number(kafka['message.max.bytes']);
  return Number.isFinite(configured) && configured > 0 ? configured : DEFAULT_MESSAGE_MAX_BYTES;
}
