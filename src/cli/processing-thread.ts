import { extname } from 'node:path';
import { fileURLToPath } from 'node:url';
import { Worker as Thread } from 'node:worker_threads';
import type { ThreadPort } from '../runtime/offload/processing-thread.ts';

/**
 * Starts the processing thread (runtime/offload/processing-thread.ts). Topology files are TypeScript
 * and a thread does not inherit the main thread's loader hooks: it registers tsx, as `onceflow` does,
 * before it imports its entry (itself TypeScript in a checkout).
 */
export function spawnProcessingThread(): ThreadPort {
  const entry = new URL(`./processing-thread-main${extname(fileURLToPath(import.meta.url))}`, import.meta.url);
  const tsx = import.meta.resolve('tsx/esm/api');
  const bootstrap = `import(${JSON.stringify(tsx)}).then((api) => api.register()).then(() => import(${JSON.stringify(entry.href)}));`;
  return new Thread(bootstrap, {
    eval: true,
    // As the main thread's --max-semi-space-size=64 (docs/operations.md#the-nodejs-heap): its garbage is per record too.
    resourceLimits: { maxYoungGenerationSizeMb: 192 },
  }) as unknown as ThreadPort;
}
