import assert from 'node:assert/strict';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { test } from 'node:test';
import { killAt, parseKillSpec } from '../../../src/runtime/base/faults.ts';

test('a kill spec names a phase, the pass to die at and whether only passes with outputs count; anything else means no faults', () => {
  assert.deepEqual(parseKillSpec('after-produce:3'), { phase: 'after-produce', n: 3, withOutputs: false, armFile: undefined });
  assert.deepEqual(parseKillSpec('after-produce:2:outputs'), { phase: 'after-produce', n: 2, withOutputs: true, armFile: undefined });
  assert.deepEqual(parseKillSpec('after-produce:1:outputs@/tmp/x/r0.arm'), { phase: 'after-produce', n: 1, withOutputs: true, armFile: '/tmp/x/r0.arm' });
  assert.deepEqual(parseKillSpec('during-commit'), { phase: 'during-commit', n: 1, withOutputs: false, armFile: undefined });
  assert.equal(parseKillSpec('after-lunch:1'), undefined);
  assert.equal(parseKillSpec(undefined), undefined);
});

test('the hook kills at the n-th pass of its phase; with `outputs` a pass whose transaction wrote no output record does not count', () => {
  let kills = 0;
  const hook = killAt('after-produce:2:outputs', () => kills++);
  hook('before-produce', { outputRecords: 5 });
  hook('after-produce', { outputRecords: 0 });
  hook('after-produce', { outputRecords: 0 });
  hook('after-produce', { outputRecords: 4 });
  assert.equal(kills, 0, 'one pass with outputs so far, and passes without them are not counted');
  hook('after-produce', { outputRecords: 1 });
  assert.equal(kills, 1);

  let plainKills = 0;
  const plain = killAt('after-produce:2', () => plainKills++);
  plain('after-produce', { outputRecords: 0 });
  plain('after-produce', { outputRecords: 0 });
  assert.equal(plainKills, 1, 'without `outputs` every pass counts');
});

test('with an arm file, no pass counts until the file exists: the harness picks the moment, the phase picks the point', () => {
  const dir = mkdtempSync(join(tmpdir(), 'onceflow-faults-'));
  try {
    const file = join(dir, 'r0.arm');
    let kills = 0;
    const hook = killAt(`after-produce:1:outputs@${file}`, () => kills++);
    hook('after-produce', { outputRecords: 3 });
    assert.equal(kills, 0, 'not armed yet');
    writeFileSync(file, '');
    hook('after-produce', { outputRecords: 0 });
    assert.equal(kills, 0, 'armed, but that transaction wrote no output');
    hook('after-produce', { outputRecords: 2 });
    assert.equal(kills, 1);
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});
