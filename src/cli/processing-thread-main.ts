// The processing thread's entry (runtime/offload/processing-thread.ts): loads the topology again and runs
// the records the worker hands it through the stateless sub-topologies' tasks.
import { createRequire } from 'node:module';
import { parentPort } from 'node:worker_threads';
import { RecordSizeLimits } from '../core/record-size.ts';
import { loadTopology } from '../dsl/load.ts';
import { compile } from '../graph/compile.ts';
import type { CompiledTopology } from '../graph/compiled.ts';
import { OffloadedTasks, offloadableSubtopologies, type RunResult } from '../runtime/offload/offloaded-tasks.ts';
import type { FromThread, ToThread } from '../runtime/offload/processing-thread.ts';

const port = parentPort;
if (port === null) throw new Error('processing-thread-main runs only as a worker thread');
withoutKafkaBinding();
const reply = (m: FromThread, transfer: ArrayBuffer[] = []) => port.postMessage(m, transfer);

let tasks: OffloadedTasks | undefined;
// One request at a time, in the order sent: a partition's runs must be processed in order.
let queue: Promise<void> = Promise.resolve();

port.on('message', (m: ToThread) => {
  queue = queue.then(() => handle(m)).catch((e: unknown) => reply({ type: 'failed', message: e instanceof Error ? e.message : String(e) }));
});

async function handle(m: ToThread): Promise<void> {
  if (m.type === 'init') {
    let plan: CompiledTopology;
    try {
      plan = compile(await loadTopology(m.file), m.appId !== undefined ? { appId: m.appId } : {});
    } catch (e) {
      reply({ type: 'failed', message: e instanceof Error ? e.message : String(e) });
      return;
    }
    tasks = new OffloadedTasks(plan, new RecordSizeLimits(m.messageMaxBytes, m.topicMaxMessageBytes));
    reply({ type: 'ready', offloadable: offloadableSubtopologies(plan), sourceTopics: plan.subtopologies.map((s) => s.sourceTopics) });
    return;
  }
  if (tasks === undefined) throw new Error('records before the topology was loaded');
  const results: RunResult[] = [];
  const transfer: ArrayBuffer[] = [];
  for (const { subtopology, run, streamTime } of m.runs) {
    const result = await tasks.process(subtopology, run, streamTime);
    results.push(result);
    transfer.push(result.outputs.bytes, result.outputs.fields.buffer as ArrayBuffer);
  }
  reply({ type: 'processed', id: m.id, results }, transfer);
}

/**
 * The Kafka client's native binding loads once per process (it is not context-aware: a second load,
 * here, fails with "Module did not self-register"), and a topology file that imports `onceflow` imports
 * the client with it. Nothing on this thread calls Kafka, so the module that loads the binding is
 * answered from the require cache with a stand-in that has what the client's modules read when they
 * load and refuses anything else.
 */
function withoutKafkaBinding(): void {
  const require = createRequire(import.meta.url);
  let file: string;
  try {
    file = require.resolve('@confluentinc/kafka-javascript/librdkafka.js');
  } catch {
    return;
  }
  const loaded: Partial<Record<string, unknown>> = { features: () => '', librdkafkaVersion: '', topic: {} };
  const exports = new Proxy(loaded, {
    get: (target, name) =>
      typeof name !== 'string' || name in target
        ? target[name as string]
        : () => {
            throw new Error(`the Kafka client (${name}) is not available on the processing thread`);
          },
  });
  require.cache[file] = { id: file, filename: file, loaded: true, exports } as unknown as NodeJS.Module;
}
