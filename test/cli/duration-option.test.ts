import assert from 'node:assert/strict';
import { test } from 'node:test';
import { InvalidArgumentError } from 'commander';
import { durationMs } from '../../src/cli/duration-option.ts';

test('a duration is read in days, hours, minutes, seconds or milliseconds; anything else is refused', () => {
  assert.deepEqual(['30d', '12h', '90m', '45s', '500ms', '2500'].map(durationMs), [2_592_000_000, 43_200_000, 5_400_000, 45_000, 500, 2_500]);
  for (const bad of ['', '30 days', '-1d', '1.5h', 'd']) assert.throws(() => durationMs(bad), InvalidArgumentError, bad);
});
