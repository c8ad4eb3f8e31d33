import { closeSync, mkdirSync, openSync, readFileSync, unlinkSync, writeSync } from 'node:fs';
import { hostname } from 'node:os';
import { join } from 'node:path';

/** An instance id this process holds, and how to give it back. */
export interface InstanceIdClaim {
  readonly instanceId: string;
  release(): void;
}

const sanitize = (name: string): string => name.replace(/[^a-zA-Z0-9._-]/g, '-');

function processAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (e) {
    // EPERM: it exists but belongs to someone else.
    return (e as NodeJS.ErrnoException).code === 'EPERM';
  }
}

/**
 * The instance id of a worker started without one. It must be stable across restarts (so a restart
 * fences its own crashed incarnation at once and finds its persistent state again) and must never be
 * shared by two live processes (they would fence each other: see instance-guard.ts).
 *
 * - On Kubernetes the pod name (HOSTNAME): unique among live pods, stable for a StatefulSet's pods.
 * - Elsewhere `<host>-<n>`, where n is the lowest slot no live process on this host holds for this
 *   app. A slot is a lock file under `<stateDir>/<appId>/.instances/` holding its owner's pid; one
 *   whose owner is gone is taken over. The first process on a host is `<host>-0` after every restart,
 *   a second one started beside it `<host>-1`.
 */
export function claimDefaultInstanceId(opts: { readonly appId: string; readonly stateDir: string }): InstanceIdClaim {
  const host = sanitize(process.env.HOSTNAME ?? hostname());
  if (process.env.KUBERNETES_SERVICE_HOST) return { instanceId: host, release: () => undefined };
  for (let slot = 0; ; slot++) {
    const claim = lockInstanceId({ ...opts, instanceId: `${host}-${slot}` });
    if (claim) return claim;
  }
}

/**
 * Takes this host's lock on an instance id (`<stateDir>/<appId>/.instances/<id>.pid`); undefined
 * while a live process holds it. Every worker holds the lock of its id for its life, so a process on
 * this host that finds the lock free (or left by a dead process) knows that no live process here
 * uses the id: a group member with it on this host is a crashed incarnation (instance-guard.ts).
 */
export function lockInstanceId(opts: { readonly appId: string; readonly stateDir: string; readonly instanceId: string }): InstanceIdClaim | undefined {
  const dir = join(opts.stateDir, opts.appId, '.instances');
  mkdirSync(dir, { recursive: true });
  const lock = join(dir, `${opts.instanceId}.pid`);
  if (!tryLock(lock)) return undefined;
  return {
    instanceId: opts.instanceId,
    release: () => {
      try {
        if (readFileSync(lock, 'utf8') === String(process.pid)) unlinkSync(lock);
      } catch {
        /* already gone */
      }
    },
  };
}

function tryLock(lock: string): boolean {
  for (let attempt = 0; attempt < 2; attempt++) {
    try {
      const fd = openSync(lock, 'wx');
      writeSync(fd, String(process.pid));
      closeSync(fd);
      return true;
    } catch (e) {
      if ((e as NodeJS.ErrnoException).code !== 'EEXIST') throw e;
    }
    let owner = Number.NaN;
    try {
      owner = Number(readFileSync(lock, 'utf8'));
    } catch {
      continue; // released between the two calls: try to create it again
    }
    // A live owner keeps its slot (this process too: its slot belongs to another worker in it).
    if (Number.isInteger(owner) && owner > 0 && processAlive(owner)) return false;
    try {
      unlinkSync(lock);
    } catch {
      /* someone else took it over first: the next create decides */
    }
  }
  return false;
}
