/**
 * Every TypeScript example in docs/dsl.md and the README compiles (issue #23): an example that has
 * drifted from the API teaches the mistake it shows. Each ```ts block is written to a file under
 * test/tmp and type-checked with the repository's strict compiler options, `onceflow`,
 * `onceflow/testing` and `onceflow/effects` mapped to src/ as a user's project maps them to the
 * package. A block without `import` lines continues the document's first block (its setup).
 */
import { after, test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import ts from 'typescript';
import { projectRoot } from '../../src/kafka/paths.ts';

const root = projectRoot();
mkdirSync(join(root, 'test', 'tmp'), { recursive: true });
const dir = mkdtempSync(join(root, 'test', 'tmp', 'docs-'));
after(() => rmSync(dir, { recursive: true, force: true }));

interface Block {
  readonly doc: string;
  /** 1-based line in the document of the block's first code line. */
  readonly line: number;
  readonly info: string;
  readonly code: string;
}

function blocksOf(doc: string, text: string): Block[] {
  const lines = text.split('\n');
  const out: Block[] = [];
  for (let i = 0; i < lines.length; i++) {
    const open = /^```(.*)$/.exec(lines[i]!);
    if (!open) continue;
    const start = i + 1;
    let end = start;
    while (end < lines.length && !/^```\s*$/.test(lines[end]!)) end++;
    out.push({ doc, line: start + 1, info: open[1]!.trim(), code: lines.slice(start, end).join('\n') });
    i = end;
  }
  return out;
}

const isTypeScript = (info: string): boolean => /^(ts|typescript|tsx)\b/.test(info);
const hasImports = (code: string): boolean => /^import\s/m.test(code);

interface Example {
  readonly file: string;
  readonly block: Block;
  /** Lines of the setup block put before this one, and where that block is. */
  readonly prelude?: Block;
}

/** One file per block, so that examples may reuse names; a continuation gets its document's setup first. */
function writeExamples(blocks: readonly Block[], into: string): Example[] {
  const setup = new Map<string, Block>();
  for (const b of blocks) if (!setup.has(b.doc) && hasImports(b.code)) setup.set(b.doc, b);
  return blocks.map((block, i) => {
    const prelude = hasImports(block.code) ? undefined : setup.get(block.doc);
    const file = join(into, `${block.doc.replace(/[^a-z0-9]+/gi, '-')}-${i}.ts`);
    writeFileSync(file, `${prelude ? `${prelude.code}\n` : ''}${block.code}\nexport {};\n`);
    return { file, block, ...(prelude ? { prelude } : {}) };
  });
}

function compilerOptions(): ts.CompilerOptions {
  const configPath = join(root, 'tsconfig.json');
  const config = ts.readConfigFile(configPath, (p) => ts.sys.readFile(p));
  const { options } = ts.parseJsonConfigFileContent(config.config, ts.sys, root, undefined, configPath);
  const src = (p: string): string[] => [join(root, 'src', p)];
  return { ...options, noEmit: true, paths: { onceflow: src('index.ts'), 'onceflow/testing': src('testing/index.ts'), 'onceflow/effects': src('effects/index.ts') } };
}

/** Type-checks the examples; each error is reported at its line in the document it came from. */
function check(examples: readonly Example[]): string[] {
  const program = ts.createProgram({ rootNames: examples.map((e) => e.file), options: compilerOptions() });
  const byFile = new Map(examples.map((e) => [ts.sys.resolvePath(e.file), e]));
  return ts.getPreEmitDiagnostics(program).map((d) => {
    const message = ts.flattenDiagnosticMessageText(d.messageText, '\n  ');
    const example = d.file ? byFile.get(ts.sys.resolvePath(d.file.fileName)) : undefined;
    if (!d.file || d.start === undefined || !example) return `${d.file?.fileName ?? '(global)'}: TS${d.code}: ${message}`;
    const { line, character } = d.file.getLineAndCharacterOfPosition(d.start);
    const preludeLines = example.prelude ? example.prelude.code.split('\n').length : 0;
    const [from, at] = line < preludeLines ? [example.prelude!, line] : [example.block, line - preludeLines];
    return `${from.doc}:${from.line + at}:${character + 1} - TS${d.code}: ${message}`;
  });
}

const docs = ['docs/dsl.md', 'README.md'];
const blocks = docs.flatMap((doc) => blocksOf(doc, readFileSync(join(root, doc), 'utf8')));

test('every TypeScript block is a plain ```ts block, so none escapes the check', () => {
  const other = blocks.filter((b) => isTypeScript(b.info) && b.info !== 'ts').map((b) => `${b.doc}:${b.line - 1} \`\`\`${b.info}`);
  assert.deepEqual(other, []);
  // A change to the fence syntax that found no blocks would otherwise pass vacuously.
  assert.ok(blocks.filter((b) => b.doc === 'docs/dsl.md' && b.info === 'ts').length >= 15);
  assert.ok(blocks.some((b) => b.doc === 'README.md' && b.info === 'ts'));
});

test('every example in docs/dsl.md and the README type-checks under the strict options', () => {
  const examples = writeExamples(blocks.filter((b) => b.info === 'ts'), dir);
  const errors = check(examples);
  assert.deepEqual(errors, [], `examples that do not compile:\n${errors.join('\n')}`);
});

test('the check fails on a wrong example and names its line in the document', () => {
  const setup: Block = { doc: 'wrong.md', line: 3, info: 'ts', code: "import { TopologyBuilder, jsonSerde, stringSerde } from 'onceflow';\nconst app = new TopologyBuilder({ appId: 'x' });\nconst s = app.stream('in', { key: stringSerde, value: jsonSerde<{ n: number }>() });" };
  // value-first, as filter once was: the key (a string) has no field n
  const wrong: Block = { doc: 'wrong.md', line: 10, info: 'ts', code: 's.to("copy");\ns.filter((v) => v.n > 0);' };
  const into = mkdtempSync(join(dir, 'wrong-'));
  const errors = check(writeExamples([setup, wrong], into));
  assert.ok(errors.some((e) => e.startsWith('wrong.md:11:') && /TS2339/.test(e)), errors.join('\n'));
});
