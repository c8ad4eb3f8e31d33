import { networkInterfaces } from 'node:os';
import { setTimeout as sleep } from 'node:timers/promises';
import { withAdmin, type AdminClient, type ClientOptions } from '../../kafka/admin.ts';
import { WorkerError } from '../base/errors.ts';
import { describeGroup } from '../../kafka/groups.ts';

/** A member of the application's consumer group, as the group coordinator describes it. */
export interface GroupMember {
  readonly memberId: string;
  readonly clientId: string;
  readonly host: string;
}

export interface InstanceGuardOptions {
  readonly bootstrap: string;
  readonly groupId: string;
  /** Every client of a worker uses its transactional id as client.id: that is how a namesake is recognised. */
  readonly transactionalId: string;
  readonly kafka: ClientOptions;
  /** How to reach an admin client; the real one by default. */
  readonly withAdmin?: <T>(bootstrap: string, fn: (admin: AdminClient) => Promise<T>, kafka: ClientOptions) => Promise<T>;
}

/** Members of the group whose client id is this worker's transactional id; undefined when the group cannot be described. */
async function namesakes(admin: AdminClient, opts: InstanceGuardOptions): Promise<GroupMember[] | undefined> {
  try {
    // A group the cluster does not list has no member to collide with.
    const group = await describeGroup(admin, opts.groupId);
    return (group?.members ?? []).filter((m) => m.clientId === opts.transactionalId).map((m) => ({ memberId: m.memberId, clientId: m.clientId, host: m.clientHost.replace(/^\//, '') }));
  } catch {
    // Without DESCRIBE on the group (or with the broker briefly away) the guard cannot look; the
    // runtime's rewind rules still keep a collision from losing records.
    return undefined;
  }
}

function duplicateInstance(opts: InstanceGuardOptions, others: readonly GroupMember[], detail: string, cause?: unknown): WorkerError {
  const who = others.length > 0 ? others.map((m) => `member ${m.memberId} (client id ${m.clientId}, host ${m.host})`).join(' and ') : 'another process';
  return new WorkerError(
    'DUPLICATE_INSTANCE_ID',
    `${who} already uses transactional id ${opts.transactionalId} in group ${opts.groupId}: ${detail}. Give each replica its own --instance-id (or leave it unset: the default is unique per process on a host)`,
    cause === undefined ? undefined : { cause },
  );
}

/** Addresses a group member of this host may show as its client host. */
function localAddresses(): Set<string> {
  const addresses = new Set(['127.0.0.1', '::1', '0:0:0:0:0:0:0:1', 'localhost']);
  for (const list of Object.values(networkInterfaces())) for (const a of list ?? []) addresses.add(a.address);
  return addresses;
}

/**
 * Before this worker's producer fences anyone: refuses when a live process already uses this
 * transactional id. Two ways to know, waited on together:
 * - on this host, the id's lock (instance-id.ts): while a live process holds it, this worker waits
 *   (a rolling update's old process is about to stop); once it is free, any group member with the
 *   id on this host is a crashed incarnation, and a restart goes on at once;
 * - elsewhere, the group: a member with the id on another host that is still there after the session
 *   timeout (longer than a crashed process stays in the group) is alive.
 * `claimLocal` takes the lock when it can and says whether this worker holds it; `stopping` ends the wait.
 */
/** How a starting worker looks for a live namesake: the group, this host's lock on the id, whether it is asked to stop. */
export interface NamesakeCheck extends InstanceGuardOptions {
  readonly sessionTimeoutMs: number;
  readonly claimLocal: () => boolean;
  readonly stopping: () => boolean;
}

export async function refuseLiveNamesake(admin: AdminClient, opts: NamesakeCheck): Promise<void> {
  const waitMs = opts.sessionTimeoutMs + 3_000;
  const deadline = Date.now() + waitMs;
  const local = localAddresses();
  for (;;) {
    // Asked to stop while waiting: nothing was consumed, and nothing will be (the loop never runs).
    if (opts.stopping()) return;
    const holdsLocal = opts.claimLocal();
    const others = (await namesakes(admin, opts)) ?? [];
    const live = holdsLocal ? others.filter((m) => !local.has(m.host)) : others;
    if (holdsLocal && live.length === 0) return;
    if (Date.now() >= deadline) {
      const detail = holdsLocal
        ? `it was still a live member after ${waitMs} ms (longer than a crashed process stays in the group), so nothing was consumed`
        : `a live process on this host has held the id's lock (under stateDir) for ${waitMs} ms, so nothing was consumed`;
      throw duplicateInstance(opts, live, detail);
    }
    await sleep(500);
  }
}

/**
 * After this worker's producer was fenced: another process with the same transactional id fenced it.
 * When that process is in the group beside this one, this one steps back (it does not fence the
 * other in turn, so exactly one of the two goes on). Fenced with no namesake in the group (a
 * transaction that outlived its timeout, or a namesake not joined yet) the worker carries on.
 */
export async function stepBackIfNamesakeLive(opts: InstanceGuardOptions, cause: unknown): Promise<void> {
  // A client of its own, not one held for the worker's life: fencings are rare, and the admin is then idle.
  const found = await (opts.withAdmin ?? withAdmin)(opts.bootstrap, (admin) => namesakes(admin, opts), opts.kafka).catch(() => undefined);
  // This worker is one of the members listed; a second one with its client id is the other process.
  if (found && found.length >= 2) {
    throw duplicateInstance(opts, found, 'another process with it fenced this worker\'s producer, and this worker steps back (without fencing it in turn) so that exactly one of them goes on', cause);
  }
}

/** The third line: fencings too frequent to be anything but a namesake, even one the group does not show. */
export function tooManyFencings(opts: InstanceGuardOptions, fencings: number, cause: unknown): WorkerError {
  // The last error is named: librdkafka reports some failures after a partition leader or coordinator moved as a
  // bare "Fatal error" too, which this rule cannot tell from a fencing (a supervisor's restart then recovers).
  const last = cause instanceof Error ? cause.message : String(cause);
  return duplicateInstance(opts, [], `this worker's producer was fenced or failed fatally ${fencings} times within a minute (the last time: ${last})`, cause);
}
