import { randomBytes } from 'node:crypto';
import { mkdirSync, renameSync, writeFileSync } from 'node:fs';
import { dirname } from 'node:path';

/**
 * Writes a file of the type check's cache whole or not at all: replicas started together check the same
 * topology, and a rename never leaves a half-written file for another to read. False when it cannot
 * write (a read-only file system, a locked-down container): a cache only saves time, so that must still run.
 */
export function writeCacheFile(path: string, text: string): boolean {
  try {
    mkdirSync(dirname(path), { recursive: true });
    const tmp = `${path}.${process.pid}.${randomBytes(4).toString('hex')}`;
    writeFileSync(tmp, text);
    renameSync(tmp, path);
    return true;
  } catch {
    return false;
  }
}
