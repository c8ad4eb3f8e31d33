import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { test } from 'node:test';
import { parse } from 'yaml';
import { projectRoot } from '../../src/kafka/paths.ts';

/** The CLI as a user runs it, with no broker configured anywhere: no ONCEFLOW_* variable, an empty dev-cluster directory. */
function onceflow(args: string[], extraEnv: Record<string, string> = {}): Promise<{ code: number; stdout: string; stderr: string }> {
  const env: NodeJS.ProcessEnv = { PATH: process.env.PATH, HOME: process.env.HOME, ONCEFLOW_HOME: mkdtempSync(join(tmpdir(), 'onceflow-home-')), ...extraEnv };
  return new Promise((resolve) => {
    execFile(process.execPath, ['--import', 'tsx', 'src/cli/main.ts', ...args], { cwd: projectRoot(), env, timeout: 120_000 }, (error, stdout, stderr) => {
      resolve({ code: error ? (typeof error.code === 'number' ? error.code : 1) : 0, stdout, stderr });
    });
  });
}

const STACK_FRAME = /^\s+at /m;

test('an unreachable broker is BROKER_UNREACHABLE naming the address and where it came from, for every command that talks to Kafka, never a stack', async () => {
  const unreachable = '127.0.0.1:1';
  const commands: { name: string; args: string[]; env?: Record<string, string> }[] = [
    { name: 'run', args: ['run', 'topology/word-count.ts', '--no-typecheck', '--bootstrap', unreachable] },
    { name: 'status', args: ['status', '--app-id', 'orders'], env: { ONCEFLOW_BOOTSTRAP: unreachable } },
    { name: 'dlq list', args: ['dlq', 'list', '--app-id', 'orders', '--bootstrap', unreachable] },
    { name: 'console', args: ['console', 'topology/word-count.ts', '--no-typecheck', '--port', '0', '--bootstrap', unreachable] },
    { name: 'verify', args: ['verify', '--input', 'orders', '--output', 'totals', '--app-id', 'orders', '--bootstrap', unreachable] },
    { name: 'topics list', args: ['topics', 'list', '--bootstrap', unreachable] },
    { name: 'produce', args: ['produce', 'orders', '--bootstrap', unreachable] },
    { name: 'consume', args: ['consume', 'orders', '--from-beginning', '--bootstrap', unreachable] },
  ];
  const results = await Promise.all(commands.map((c) => onceflow(c.args, c.env)));
  commands.forEach((c, i) => {
    const r = results[i]!;
    assert.equal(r.code, 1, `${c.name}: exit code\n${r.stderr}`);
    assert.match(r.stderr, /^onceflow: error \[BROKER_UNREACHABLE\]: no Kafka broker answered at 127\.0\.0\.1:1 \(from (--bootstrap|ONCEFLOW_BOOTSTRAP)\): \d metadata requests? over/m, `${c.name}: ${r.stderr}`);
    assert.doesNotMatch(r.stderr, STACK_FRAME, `${c.name} printed a stack:\n${r.stderr}`);
  });
  assert.match(results[1]!.stderr, /from ONCEFLOW_BOOTSTRAP/, 'status says the address came from the environment');
});

test('a missing bootstrap names --bootstrap and ONCEFLOW_BOOTSTRAP', async () => {
  const [status, run, topics] = await Promise.all([
    onceflow(['status', '--app-id', 'orders']),
    onceflow(['run', 'topology/word-count.ts', '--no-typecheck']),
    onceflow(['topics', 'list']),
  ]);
  for (const r of [status, run, topics]) {
    assert.equal(r.code, 1, r.stderr);
    assert.match(r.stderr, /--bootstrap/);
    assert.match(r.stderr, /ONCEFLOW_BOOTSTRAP/);
    assert.doesNotMatch(r.stderr, /expected string, received undefined/);
    assert.doesNotMatch(r.stderr, STACK_FRAME);
  }
});

test('config print without --app-id shows the topology\'s app id, or says it is the topology\'s; --version prints the package version', async () => {
  const [bare, withTopology, version] = await Promise.all([
    onceflow(['config', 'print', '--bootstrap', 'b:9092']),
    onceflow(['config', 'print', 'topology/word-count.ts', '--bootstrap', 'b:9092']),
    onceflow(['--version']),
  ]);
  assert.equal(bare.code, 0, bare.stderr);
  assert.equal((parse(bare.stdout) as { appId: string }).appId, "(the topology's)");
  assert.equal(withTopology.code, 0, withTopology.stderr);
  assert.equal((parse(withTopology.stdout) as { appId: string }).appId, 'word-count');
  assert.equal(version.code, 0);
  assert.match(version.stdout.trim(), /^\d+\.\d+\.\d+/);
});
