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

// A checkout runs src/*.ts through tsx; the installed package has only dist/, the same tree built to .js.
// Both keep src/ and topology/ side by side, so one relative path from here serves either.
const fromSources = import.meta.url.endsWith('.ts');
const extension = fromSources ? '.ts' : '.js';

/**
 * A module of this package as it runs here, by its path below src/ without extension ('cli/main'):
 * src/cli/main.ts in a checkout, dist/src/cli/main.js in the installed package.
 */
export function packageModule(pathBelowSrc: string): string {
  return fileURLToPath(new URL(`../${pathBelowSrc}${extension}`, import.meta.url));
}

/**
 * One of the example topologies the package ships (`demo` and `chaos` run them), by name ('orders'):
 * topology/orders.ts in a checkout, dist/topology/orders.js in the installed package.
 */
export function exampleTopology(name: string): string {
  return fileURLToPath(new URL(`../../topology/${name}${extension}`, import.meta.url));
}

/**
 * What `node` needs before a package module can be its entry: tsx in a checkout (resolved from here,
 * so it does not depend on the child's working directory), nothing for the built JavaScript.
 */
export function packageLoaderArgs(): string[] {
  return fromSources ? ['--import', import.meta.resolve('tsx')] : [];
}
