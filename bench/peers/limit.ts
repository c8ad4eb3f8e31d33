/**
 * The "limit" contender: consume → produce copy with the same client onceflow uses, and nothing else —
 * no deserialization, no state, no transactions, no lineage headers. What is left is the cost of moving
 * bytes through librdkafka and the broker on this machine, which is the ceiling for any processor here.
 *
 * Usage: node --import tsx bench/peers/limit.ts <bootstrap> <input> <output> <group id>
 * Prints JSON event lines like `onceflow run --events` so bench/run.ts can treat it the same way.
 * Offsets are committed (auto-commit, stored only after the batch's produce calls) so bench/run.ts
 * can see when the group has reached the end of the input, as it does for the other contenders.
 */
import { connectConsumer, connectProducer, consumeBatch, disconnect, flush } from '../../src/kafka/clients.ts';

const [bootstrap, input, output, groupId] = process.argv.slice(2);
if (!bootstrap || !input || !output || !groupId) {
  process.stderr.write('usage: limit.ts <bootstrap> <input> <output> <group id>\n');
  process.exit(2);
}

const event = (e: Record<string, unknown>) => process.stdout.write(`${JSON.stringify({ at: Date.now(), ...e })}\n`);

const consumer = await connectConsumer(
  {
    'bootstrap.servers': bootstrap,
    'group.id': groupId,
    'enable.auto.commit': true,
    'enable.auto.offset.store': false,
    'auto.commit.interval.ms': 100,
    // Same fetch settings as the onceflow worker, so the difference is the processing, not the fetching.
    'fetch.wait.max.ms': 20,
    'auto.offset.reset': 'earliest',
  },
  {},
);
// As in the bench's reader: hand over what is there instead of waiting for a full batch under a trickle.
const tuned = consumer as unknown as { setDefaultConsumeTimeout(ms: number): void; setDefaultIsTimeoutOnlyForFirstMessage(b: boolean): void };
tuned.setDefaultConsumeTimeout(50);
tuned.setDefaultIsTimeoutOnlyForFirstMessage(true);
const producer = await connectProducer({ 'bootstrap.servers': bootstrap, 'linger.ms': 5, 'enable.idempotence': false, 'acks': 'all' });

let stopping = false;
const stop = () => {
  stopping = true;
};
process.on('SIGTERM', stop);
process.on('SIGINT', stop);

consumer.subscribe([input]);
event({ type: 'started' });
let copied = 0;
while (!stopping) {
  const batch = await consumeBatch(consumer, 1000);
  if (batch.length === 0) continue;
  if (copied === 0) event({ type: 'ready' });
  for (const m of batch) {
    for (;;) {
      try {
        producer.produce(output, null, m.value, m.key, m.timestamp ?? Date.now());
        break;
      } catch {
        // Local queue full: let librdkafka drain it.
        await new Promise((r) => setTimeout(r, 5));
      }
    }
  }
  copied += batch.length;
  // Store the offsets only now: auto-commit then never claims a record that was not handed to the producer.
  const next = new Map<string, { topic: string; partition: number; offset: number }>();
  for (const m of batch) next.set(`${m.partition}`, { topic: m.topic, partition: m.partition, offset: m.offset + 1 });
  consumer.offsetsStore([...next.values()]);
  event({ type: 'committed', records: batch.length, ms: 0 });
}
await flush(producer, 10_000).catch(() => undefined);
await disconnect(producer);
await disconnect(consumer);
event({ type: 'stopped', copied });
