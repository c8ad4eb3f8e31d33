import { describeGroup } from '../../kafka/groups.ts';
import type { WorkerServices } from '../base/worker-services.ts';
import type { GroupMemberAssignment } from './standby-placement.ts';

/**
 * The application's group as its coordinator describes it now: each member's client id and the
 * partitions it owns. Undefined when it cannot be described (no DESCRIBE on the group, the broker
 * away): the keeper then keeps what it holds warm and looks again later.
 */
export async function groupMembers(services: WorkerServices): Promise<GroupMemberAssignment[] | undefined> {
  const { bootstrap, kafka, appId } = services.config;
  try {
    const group = await services.clients.withAdmin(bootstrap, (admin) => describeGroup(admin, appId), kafka);
    return (group?.members ?? []).map((m) => ({ clientId: m.clientId, partitions: m.assignment?.topicPartitions ?? [] }));
  } catch {
    return undefined;
  }
}
