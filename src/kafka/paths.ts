import { existsSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

/** The folder holding onceflow's package.json: caches and the dev cluster live under it. */
export function projectRoot(): string {
  let dir = dirname(fileURLToPath(import.meta.url));
  while (!existsSync(join(dir, 'package.json'))) {
    const parent = dirname(dir);
    if (parent === dir) throw new Error('onceflow: no package.json above ' + fileURLToPath(import.meta.url));
    dir = parent;
  }
  return dir;
}
