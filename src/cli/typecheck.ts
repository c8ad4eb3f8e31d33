import { execFile } from 'node:child_process';
import { createHash } from 'node:crypto';
import { existsSync, readFileSync, realpathSync, statSync } from 'node:fs';
import { createRequire } from 'node:module';
import { tmpdir } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { OnceflowError } from '../errors.ts';
import { packageLoaderArgs, packageModule } from '../kafka/paths.ts';
import { writeCacheFile } from './cache-file.ts';
import { RUNTIME_ENV } from './config-sources.ts';
import type { CheckOutcome } from './typecheck-program.ts';

/**
 * tsx strips a topology's types without checking them, so a lambda with its parameters in the wrong
 * order ran and silently did the wrong thing. `run` and `describe` check the file first, as the
 * user's own `tsc` would, and stop here instead.
 */
export class TopologyTypeError extends OnceflowError {
  readonly code = 'TOPOLOGY_TYPE_ERROR';
  constructor(
    readonly file: string,
    readonly diagnostics: readonly string[],
    total: number,
  ) {
    const more = total > diagnostics.length ? `\n... and ${total - diagnostics.length} more` : '';
    super(`${file} does not type-check (${total} error${total === 1 ? '' : 's'}; --no-typecheck skips this check):\n${diagnostics.join('\n')}${more}`);
  }
}

export class TypeScriptUnavailableError extends OnceflowError {
  readonly code = 'TYPESCRIPT_UNAVAILABLE';
  constructor(detail: string) {
    super(`cannot type-check the topology: the typescript package could not be loaded (${detail}); install it or pass --no-typecheck`);
  }
}

export class TypecheckFailedError extends OnceflowError {
  readonly code = 'TYPECHECK_FAILED';
  constructor(file: string, detail: string) {
    super(`the type check of ${file} did not finish (--no-typecheck skips it): ${detail}`);
  }
}

export interface TypecheckOptions {
  /** Where passes are cached; defaults to $ONCEFLOW_CACHE (or its alias $ONCEFLOW_CACHE_DIR), else node_modules/.cache/onceflow above the file. */
  readonly cacheDir?: string;
  /** Paths in messages are relative to it when below it. Defaults to process.cwd(). */
  readonly cwd?: string;
}

export interface TypecheckResult {
  /** `cached`: these exact files passed before; `checked`: the compiler ran and passed; `missing`: no such file (loading it says so). */
  readonly outcome: 'cached' | 'checked' | 'missing';
  /** The cache entry, when one was read or written. */
  readonly cacheFile?: string;
}

/** Bump when what an entry means changes, so that an older onceflow's entries are not trusted. */
const CACHE_FORMAT = 1;

interface CacheEntry {
  readonly format: number;
  /** Every file the passing check read, with the sha-256 of its contents then. */
  readonly inputs: readonly (readonly [path: string, sha256: string])[];
}

const sha256 = (data: string | Buffer): string => createHash('sha256').update(data).digest('hex');

function isDirectory(p: string): boolean {
  try {
    return statSync(p).isDirectory();
  } catch {
    return false;
  }
}

function findUp(from: string, name: string, test: (p: string) => boolean): string | undefined {
  for (let dir = from; ; dir = dirname(dir)) {
    const candidate = join(dir, name);
    if (test(candidate)) return candidate;
    if (dirname(dir) === dir) return undefined;
  }
}

/** node_modules/.cache is where tools keep caches by convention: ignored by git, gone with node_modules. */
function defaultCacheDir(fileDir: string): string {
  const fromEnv = process.env[RUNTIME_ENV.cache] || process.env[RUNTIME_ENV.typecheckCacheAlias];
  if (fromEnv) return resolve(fromEnv);
  const modules = findUp(fileDir, 'node_modules', isDirectory);
  return modules ? join(modules, '.cache', 'onceflow') : join(tmpdir(), 'onceflow-cache');
}

/** A result depends on the TypeScript version too, and its package.json changes with it. */
function typescriptManifest(): string[] {
  try {
    return [createRequire(import.meta.url).resolve('typescript/package.json')];
  } catch {
    return [];
  }
}

function readEntry(path: string): CacheEntry | undefined {
  try {
    const entry = JSON.parse(readFileSync(path, 'utf8')) as CacheEntry;
    return entry.format === CACHE_FORMAT && Array.isArray(entry.inputs) ? entry : undefined;
  } catch {
    return undefined;
  }
}

function unchanged(entry: CacheEntry): boolean {
  try {
    return entry.inputs.every(([path, hash]) => sha256(readFileSync(path)) === hash);
  } catch {
    return false;
  }
}

function writeEntry(path: string, inputs: readonly string[]): boolean {
  let entry: CacheEntry;
  try {
    entry = { format: CACHE_FORMAT, inputs: inputs.map((p) => [p, sha256(readFileSync(p))] as const) };
  } catch {
    return false; // an input gone since the check: nothing true to record
  }
  return writeCacheFile(path, JSON.stringify(entry));
}

/** Runs the compiler in a child process (see typecheck-child.ts for why). */
function runChecker(file: string, configPath: string | undefined, cwd: string, shownAs: string, buildInfoFile: string): Promise<CheckOutcome> {
  return new Promise((done, fail) => {
    execFile(process.execPath, [...packageLoaderArgs(), packageModule('cli/typecheck-child'), file, configPath ?? '', cwd, buildInfoFile], { maxBuffer: 16 << 20 }, (err, stdout, stderr) => {
      if (err) {
        const detail = stderr.trim().split('\n').slice(-5).join('\n') || err.message;
        fail(/Cannot find (package|module) 'typescript'/.test(stderr) ? new TypeScriptUnavailableError(detail) : new TypecheckFailedError(shownAs, detail));
        return;
      }
      try {
        done(JSON.parse(stdout) as CheckOutcome);
      } catch {
        fail(new TypecheckFailedError(shownAs, `unreadable output from the checker: ${stdout.slice(0, 200)}`));
      }
    });
  });
}

/**
 * Type-checks a topology file and the local files it imports under the nearest tsconfig.json (strict
 * defaults without one). A pass is cached against the contents of every file the compiler read, so a
 * restart with nothing changed costs a few milliseconds of hashing instead of seconds of compiling.
 */
export async function typecheckTopology(file: string, opts: TypecheckOptions = {}): Promise<TypecheckResult> {
  const abs = resolve(file);
  if (!existsSync(abs)) return { outcome: 'missing' };
  const real = realpathSync(abs);
  const configPath = findUp(dirname(real), 'tsconfig.json', existsSync);
  const cacheFile = join(opts.cacheDir ?? defaultCacheDir(dirname(real)), 'typecheck', `${sha256(`${CACHE_FORMAT}\0${real}\0${configPath ?? ''}`)}.json`);
  const entry = readEntry(cacheFile);
  if (entry !== undefined && unchanged(entry)) return { outcome: 'cached', cacheFile };
  // Beside the entry: what the last check found in each file, so that one after an edit checks only what changed.
  const outcome = await runChecker(real, configPath, opts.cwd ?? process.cwd(), file, cacheFile.replace(/\.json$/, '.tsbuildinfo'));
  if (!outcome.ok) throw new TopologyTypeError(file, outcome.diagnostics, outcome.total);
  const inputs = [...new Set([...outcome.inputs, ...typescriptManifest()])];
  return writeEntry(cacheFile, inputs) ? { outcome: 'checked', cacheFile } : { outcome: 'checked' };
}
