import { waitCaughtUp } from '../progress.ts';
import type { ChaosCluster } from './cluster.ts';
import type { Replicas } from './replicas.ts';
import { stallsEnded } from './stalls.ts';
import type { RunNames } from './workload.ts';

/** Until the group has processed the whole input; if it never does, each replica's last words are logged first. */
export async function waitForCatchUp(bootstrap: string, names: RunNames, repartitionTopics: readonly string[], cluster: ChaosCluster, replicas: Replicas): Promise<void> {
  // A stall still running would hold a worker's offsets back: caught up is asked once every stall has ended.
  await stallsEnded(cluster);
  try {
    await waitCaughtUp({ bootstrap, groupId: names.appId, plainTopics: [names.inputTopic], transactionalTopics: repartitionTopics, timeoutMs: 300_000, stableMs: 4_000 });
  } catch (e) {
    // A worker that stopped making progress is the finding: its last lines say where it stopped.
    await replicas.describeLive();
    throw e;
  }
}
