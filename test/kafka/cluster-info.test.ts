import { test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdirSync, mkdtempSync, realpathSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { defaultClusterDir } from '../../src/kafka/cluster-info.ts';

const scratch = (): string => realpathSync(mkdtempSync(join(tmpdir(), 'onceflow-devdir-')));

test('a command run anywhere below the directory `dev up` used finds its .onceflow/dev.json', () => {
  const app = scratch();
  const deep = join(app, 'src', 'jobs');
  mkdirSync(deep, { recursive: true });
  mkdirSync(join(app, '.onceflow'));
  writeFileSync(join(app, '.onceflow', 'dev.json'), '{}');
  writeFileSync(join(app, 'src', 'package.json'), '{}');
  assert.equal(defaultClusterDir(deep, {}), join(app, '.onceflow'), 'the recorded cluster wins over a nearer package.json');
  assert.equal(defaultClusterDir(app, {}), join(app, '.onceflow'));
});

test('with no cluster recorded above, `dev up` goes beside the nearest package.json, else into the current directory', () => {
  const app = scratch();
  mkdirSync(join(app, 'project', 'src'), { recursive: true });
  writeFileSync(join(app, 'project', 'package.json'), '{}');
  assert.equal(defaultClusterDir(join(app, 'project', 'src'), {}), join(app, 'project', '.onceflow'));
  mkdirSync(join(app, 'loose'));
  const loose = defaultClusterDir(join(app, 'loose'), {});
  // A package.json further up (the machine's) may be found; never one below or beside the project.
  assert.ok(loose === join(app, 'loose', '.onceflow') || !loose.startsWith(app), loose);
});

test('ONCEFLOW_HOME names the directory outright', () => {
  const app = scratch();
  assert.equal(defaultClusterDir(app, { ONCEFLOW_HOME: 'elsewhere' }), join(process.cwd(), 'elsewhere'));
});
