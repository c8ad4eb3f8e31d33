import { recordBytes, type RecordSizeLimits } from '../core/record-size.ts';
import { OnceflowError } from '../errors.ts';
import type { RecordToProduce } from '../kafka/produce-records.ts';

/** A line of `onceflow produce` whose record is over a size limit: said with its line number before anything is sent. */
export class ProduceRecordTooLargeError extends OnceflowError {
  readonly code = 'RECORD_TOO_LARGE';
  constructor(
    readonly lineNumber: number,
    readonly bytes: number,
    message: string,
  ) {
    super(message);
  }
}

export interface NumberedRecord {
  readonly lineNumber: number;
  readonly record: RecordToProduce;
}

const bytesText = (n: number): string => n.toLocaleString('en-US');

/** Which limit binds a record for `topic`, and how a user raises it. */
function bindingLimit(topic: string, limits: RecordSizeLimits): { name: string; hint: string } {
  const topicLimit = limits.topicMaxMessageBytes(topic);
  if (topicLimit !== undefined && topicLimit <= limits.messageMaxBytes) {
    return { name: `max.message.bytes ${bytesText(topicLimit)} of topic ${topic}`, hint: "raise the topic's max.message.bytes (and --max-message-bytes with it)" };
  }
  const upTo = topicLimit === undefined ? '' : `, up to the topic's max.message.bytes ${bytesText(topicLimit)}`;
  return { name: `the producer's message.max.bytes ${bytesText(limits.messageMaxBytes)}`, hint: `raise it with --max-message-bytes${upTo}` };
}

/**
 * Throws for the first record over what one produce may carry to `topic`: the smaller of the
 * producer's message.max.bytes and the topic's max.message.bytes, less the room a record's framing
 * takes in its batch (RecordSizeLimits.maxRecordBytes).
 */
export function checkRecordSizes(topic: string, records: readonly NumberedRecord[], limits: RecordSizeLimits): void {
  const max = limits.maxRecordBytes(topic);
  for (const { lineNumber, record } of records) {
    const bytes = recordBytes(record.key, record.value, record.headers ?? []);
    if (bytes <= max) continue;
    const { name, hint } = bindingLimit(topic, limits);
    throw new ProduceRecordTooLargeError(
      lineNumber,
      bytes,
      `line ${lineNumber}: ${bytesText(bytes)} bytes, over ${name} (a record may carry ${bytesText(max)} bytes of key, value and headers under it; the rest is its framing): ${hint}. Nothing was written`,
    );
  }
}
