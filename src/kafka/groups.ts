import type { AdminClient } from './admin.ts';

export type DescribedGroup = Awaited<ReturnType<AdminClient['describeGroups']>>['groups'][number];

/**
 * One consumer group as its coordinator describes it; undefined for a group the cluster does not list.
 * DescribeGroups for a group whose coordinator is not loaded (on a fresh broker: before
 * __consumer_offsets exists) crashes the process inside the client (SIGSEGV, seen 7 times in 9
 * starts). ListGroups asks no coordinator, and a group it lists is loaded and safe to describe: every
 * describe of a group goes through here.
 */
export async function describeGroup(admin: AdminClient, groupId: string): Promise<DescribedGroup | undefined> {
  const listed = await admin.listGroups();
  if (!listed.groups.some((g) => g.groupId === groupId)) return undefined;
  return (await admin.describeGroups([groupId])).groups[0];
}
