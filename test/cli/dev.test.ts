import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, test } from 'node:test';
import { isAlive } from '../../src/kafka/processes.ts';

const dir = mkdtempSync(join(tmpdir(), 'onceflow-dev-'));
const onceflow = (...args: string[]) => spawnSync(process.execPath, ['--import', 'tsx', 'src/cli/main.ts', 'dev', ...args, '--dir', dir], { encoding: 'utf8', timeout: 120_000 });

after(() => {
  onceflow('down');
  rmSync(dir, { recursive: true, force: true });
});

test('dev up starts a broker and a registry that answer, status sees them, down leaves no process behind', async () => {
  const up = onceflow('up');
  assert.equal(up.status, 0, up.stderr);
  const bootstrap = /^ONCEFLOW_BOOTSTRAP=(127\.0\.0\.1:\d+)$/m.exec(up.stdout)?.[1];
  const registry = /^ONCEFLOW_REGISTRY_URL=(http:\/\/127\.0\.0\.1:\d+\/apis\/ccompat\/v7)$/m.exec(up.stdout)?.[1];
  assert.ok(bootstrap && registry, up.stdout);
  const pids = [...up.stdout.matchAll(/\(pid (\d+)/g)].map((m) => Number(m[1]));
  assert.equal(pids.length, 2, up.stdout);
  assert.equal((await fetch(`${registry}/subjects`)).status, 200);

  const again = onceflow('up');
  assert.match(again.stdout, /^already running: broker/m, 'a second up reuses the running cluster');

  const status = onceflow('status');
  assert.equal(status.status, 0);
  assert.match(status.stdout, new RegExp(`broker\\s+${bootstrap}\\s+pid ${pids[0]}\\s+running`));
  assert.match(status.stdout, /registry .* running/);

  const down = onceflow('down');
  assert.equal(down.status, 0, down.stderr);
  assert.match(down.stdout, new RegExp(`stopped broker pid ${pids[0]} and registry pid ${pids[1]}`));
  for (const pid of pids) assert.equal(isAlive(pid), false, `pid ${pid} still running after down`);
  const after = onceflow('status');
  assert.equal(after.status, 1);
  assert.match(after.stdout, /not running/);
});
