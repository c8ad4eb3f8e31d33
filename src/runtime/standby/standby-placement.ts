import { taskId } from '../task/task.ts';

/** A member of the application's group, named by its client id (the worker's transactional id), with what it owns now. */
export interface GroupMemberAssignment {
  readonly clientId: string;
  readonly partitions: readonly { readonly topic: string; readonly partition: number }[];
}

/**
 * Which stateful tasks this replica keeps warm. The group's members, ordered by client id, form a
 * ring; a task's standbys are the `count` members after its owner. Every replica reads the same group
 * description and so computes the same placement without talking to the others (the assignor is the
 * client's, which knows nothing of standbys: what a replica can choose is only what it keeps warm).
 *
 * A task whose owner the group does not show (its partitions are moving) is absent here; the caller
 * keeps what it already holds warm for it, since that copy is the best start for whoever gets it.
 */
export function standbyTasks(
  self: string,
  members: readonly GroupMemberAssignment[],
  /** The stateful sub-topology that reads each source topic (stateless sub-topologies are absent). */
  statefulSubtopologyOf: ReadonlyMap<string, number>,
  count: number,
): Set<string> {
  const ring = [...new Set(members.map((m) => m.clientId))].sort();
  const at = ring.indexOf(self);
  const warm = new Set<string>();
  if (count <= 0 || at < 0 || ring.length < 2) return warm;
  for (const member of members) {
    if (member.clientId === self) continue;
    const owner = ring.indexOf(member.clientId);
    // Steps from the owner to this replica around the ring: within `count`, this replica is a standby.
    const steps = (at - owner + ring.length) % ring.length;
    if (steps < 1 || steps > count) continue;
    for (const p of member.partitions) {
      const sub = statefulSubtopologyOf.get(p.topic);
      if (sub !== undefined) warm.add(taskId(sub, p.partition));
    }
  }
  return warm;
}
