import { dirname, isAbsolute, relative } from 'node:path';
import type ts from 'typescript';
import { writeCacheFile } from './cache-file.ts';

/** What one compiler run found: the files it read (for the cache), or the errors to show. */
export type CheckOutcome = { readonly ok: true; readonly inputs: readonly string[] } | { readonly ok: false; readonly diagnostics: readonly string[]; readonly total: number };

const MAX_SHOWN = 10;

/** Used when no tsconfig.json is found: the module rules tsx accepts, with strict checking. */
function defaultOptions(t: typeof ts): ts.CompilerOptions {
  return {
    target: t.ScriptTarget.ES2022,
    module: t.ModuleKind.Preserve,
    moduleResolution: t.ModuleResolutionKind.Bundler,
    strict: true,
    skipLibCheck: true,
    allowImportingTsExtensions: true,
    resolveJsonModule: true,
    esModuleInterop: true,
  };
}

interface Settings {
  readonly options: ts.CompilerOptions;
  /** tsconfig.json and every file it extends. */
  readonly configFiles: readonly string[];
  readonly errors: readonly ts.Diagnostic[];
}

/** The project's own compiler options, so the check agrees with the user's `tsc`; only emitting is turned off. */
function settingsFor(t: typeof ts, configPath: string | undefined): Settings {
  let settings: Settings = { options: defaultOptions(t), configFiles: [], errors: [] };
  if (configPath !== undefined) {
    const source = t.readJsonConfigFile(configPath, t.sys.readFile);
    const parsed = t.parseJsonSourceFileConfigFileContent(source, t.sys, dirname(configPath), undefined, configPath);
    // "No inputs were found" is about the project's include list, which a check of one file does not use.
    const errors = parsed.errors.filter((d) => d.code !== 18003);
    settings = { options: parsed.options, configFiles: [configPath, ...(source.extendedSourceFiles ?? [])], errors };
  }
  const options: ts.CompilerOptions = { ...settings.options, noEmit: true, declaration: false, declarationMap: false, composite: false, incremental: false, emitDeclarationOnly: false, sourceMap: false };
  delete options.tsBuildInfoFile;
  return { ...settings, options };
}

/** `file:line:column - error TSnnnn: message`, then the line with the span underlined. */
function formatDiagnostic(t: typeof ts, d: ts.Diagnostic, cwd: string): string {
  const message = t.flattenDiagnosticMessageText(d.messageText, '\n    ');
  if (d.file === undefined || d.start === undefined) return `error TS${d.code}: ${message}`;
  const rel = relative(cwd, d.file.fileName);
  const shown = rel !== '' && !rel.startsWith('..') && !isAbsolute(rel) ? rel : d.file.fileName;
  const { line, character } = d.file.getLineAndCharacterOfPosition(d.start);
  const source = d.file.text.split(/\r?\n/)[line] ?? '';
  const gutter = `${line + 1} | `;
  const width = Math.max(1, Math.min(d.length ?? 1, source.length - character));
  return `${shown}:${line + 1}:${character + 1} - error TS${d.code}: ${message}\n    ${gutter}${source}\n    ${' '.repeat(gutter.length + character)}${'~'.repeat(width)}`;
}

/**
 * Type-checks `file` and everything it imports, as `tsc --noEmit` with the given tsconfig.json would.
 * With `buildInfoFile`, as `tsc --incremental` does: the file records what each source's check found,
 * so that after an edit only the changed files and those that depend on them are checked again.
 */
export async function checkProgram(file: string, configPath: string | undefined, cwd: string, buildInfoFile?: string): Promise<CheckOutcome> {
  const t = (await import('typescript')).default;
  const settings = settingsFor(t, configPath);
  const options: ts.CompilerOptions = buildInfoFile === undefined ? settings.options : { ...settings.options, incremental: true, tsBuildInfoFile: buildInfoFile };
  const builder = t.createIncrementalProgram({ rootNames: [file], options });
  const program = builder.getProgram();
  const diagnostics = [...builder.getConfigFileParsingDiagnostics(), ...builder.getOptionsDiagnostics(), ...builder.getSyntacticDiagnostics(), ...builder.getGlobalDiagnostics(), ...builder.getSemanticDiagnostics()];
  // Written pass or fail: the next check after a fix reuses what this one found in the unchanged files.
  // Whole or not at all (cache-file.ts): a torn build info would fail the next check.
  if (buildInfoFile !== undefined) builder.emit(undefined, (path, text) => void writeCacheFile(path, text));
  const errors = [...settings.errors, ...diagnostics].filter((d) => d.category === t.DiagnosticCategory.Error);
  if (errors.length > 0) return { ok: false, diagnostics: errors.slice(0, MAX_SHOWN).map((d) => formatDiagnostic(t, d, cwd)), total: errors.length };
  // TypeScript's own lib files change only with its version, which the caller records separately.
  const read = program.getSourceFiles().filter((sf) => !program.isSourceFileDefaultLibrary(sf)).map((sf) => sf.fileName);
  return { ok: true, inputs: [...read, ...settings.configFiles] };
}
