import assert from 'node:assert/strict';
import { test } from 'node:test';
import { InvalidArgumentError } from 'commander';
import { intAtLeast } from '../../src/cli/int-option.ts';

test('whole numbers at or above the minimum pass; typos, fractions and smaller numbers are refused', () => {
  assert.equal(intAtLeast(0)('0'), 0);
  assert.equal(intAtLeast(1)('20000'), 20_000);
  for (const bad of ['abc', '', '1.5', '-1', '0']) assert.throws(() => intAtLeast(1)(bad), InvalidArgumentError, bad);
});
