import { randomBytes } from 'node:crypto';
import { withAdmin, ensureTopics, type TopicSpec } from '../../src/kafka/admin.ts';

/** The broker and registry `npm test` started; a test that needs them fails loudly without them. */
export function testCluster(): { bootstrap: string; registryUrl: string } {
  const bootstrap = process.env.ONCEFLOW_BOOTSTRAP;
  const registryUrl = process.env.ONCEFLOW_REGISTRY_URL;
  if (!bootstrap || !registryUrl) {
    throw new Error('ONCEFLOW_BOOTSTRAP / ONCEFLOW_REGISTRY_URL are not set: run integration tests through `npm test` (scripts/test.ts), which starts the local Kafka');
  }
  return { bootstrap, registryUrl };
}

/** A name no other test (or earlier run) uses: topics and groups are never shared between tests. */
export function uniqueName(prefix: string): string {
  return `${prefix}-${randomBytes(4).toString('hex')}`;
}

export async function createTopics(bootstrap: string, specs: TopicSpec[]): Promise<void> {
  await withAdmin(bootstrap, (admin) => ensureTopics(admin, specs));
}
