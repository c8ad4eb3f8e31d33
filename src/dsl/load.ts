import { resolve } from 'node:path';
import { pathToFileURL } from 'node:url';
import { OnceflowError } from '../errors.ts';
import { isTopologyBuilder, type TopologyBuilder } from './topology-builder.ts';

export class TopologyLoadError extends OnceflowError {
  readonly code = 'TOPOLOGY_LOAD_FAILED';
  constructor(file: string, cause: unknown) {
    super(`could not load topology file ${file}: ${cause instanceof Error ? cause.message : String(cause)}`, { cause });
  }
}

export class NotATopologyError extends OnceflowError {
  readonly code = 'NOT_A_TOPOLOGY';
  constructor(file: string, got: string) {
    super(`${file} must default-export a TopologyBuilder (export default app), but its default export is ${got}`);
  }
}

/** Imports a topology file (which must do no I/O at import) and returns its default-exported builder. */
export async function loadTopology(file: string): Promise<TopologyBuilder> {
  let mod: { default?: unknown };
  try {
    mod = (await import(pathToFileURL(resolve(file)).href)) as { default?: unknown };
  } catch (e) {
    throw new TopologyLoadError(file, e);
  }
  const b = mod.default;
  if (!isTopologyBuilder(b)) {
    const got = b === undefined ? 'missing' : b === null ? 'null' : typeof b === 'object' ? `an object (${(b as object).constructor?.name ?? 'Object'})` : `a ${typeof b}`;
    throw new NotATopologyError(file, got);
  }
  if (b.options.sourceFile === undefined) b.setSourceFile(file);
  return b;
}
