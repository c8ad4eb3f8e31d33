// The processing thread's entry (runtime/offload/processing-thread.ts): loads the topology again and runs
// the records the worker hands it through the stateless sub-topologies' tasks.
import { createRequire } from 'node:module';
import { parentPort } from 'node:worker_threads';
import { loadTopology } from '../dsl/load.ts';
import { compile } from '../graph/compile.ts';
import { ThreadRequests } from '../runtime/offload/thread-requests.ts';
import type { ToThread } from '../runtime/offload/processing-thread.ts';

const port = parentPort;
if (port === null) throw new Error('processing-thread-main runs only as a worker thread');
withoutKafkaBinding();
const requests = new ThreadRequests(
  async (init) => compile(await loadTopology(init.file), init.appId !== undefined ? { appId: init.appId } : {}),
  (message, transfer) => port.postMessage(message, transfer),
);
port.on('message', (message: ToThread) => void requests.receive(message));

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
