import { test } from 'node:test';
import assert from 'node:assert/strict';
import { TopologyTestDriver } from '../../src/testing/test-driver.ts';
import { wordCountTopology } from '../../topology/word-count.ts';
import { splitWords } from '../../processors/words.ts';

test('counts words across lines through a repartition by word', () => {
  const driver = new TopologyTestDriver(wordCountTopology());
  const lines = driver.input<string, string>('lines');
  lines.pipe('l1', 'The cat, the hat');
  lines.pipe('l2', 'a CAT');
  assert.deepEqual(driver.output<string, number>('word-counts').readKeyValues(), [['the', 1], ['cat', 1], ['the', 2], ['hat', 1], ['a', 1], ['cat', 2]]);
  assert.equal(driver.store<string, number>('counts').get('cat'), 2);
  // the re-keyed records really went through the repartition topic, keyed by word
  assert.deepEqual(driver.records('word-count-counts-repartition').map((r) => r.key?.toString()), ['the', 'cat', 'the', 'hat', 'a', 'cat']);
  assert.equal(driver.compiled.subtopologies.length, 2);
});

test('with several partitions each word is counted in exactly one task', () => {
  const driver = new TopologyTestDriver(wordCountTopology({ input: 'text', output: 'counts-out', appId: 'wc2' }), { partitions: 3 });
  const lines = driver.input<string | null, string>('text');
  for (let i = 0; i < 30; i++) lines.pipe(`k${i}`, i % 2 === 0 ? 'alpha beta' : 'beta gamma');
  const last = new Map<string, number>();
  for (const [k, v] of driver.output<string, number>('counts-out').readKeyValues()) last.set(k, v);
  assert.deepEqual(Object.fromEntries(last), { alpha: 15, beta: 30, gamma: 15 });
  const holders = [0, 1, 2].filter((p) => driver.task(1, p).get('counts', 'beta') !== undefined);
  assert.equal(holders.length, 1);
});

test('splitWords lower-cases and splits on punctuation', () => {
  assert.deepEqual(splitWords("Don't stop, NOW!"), ["don't", 'stop', 'now']);
  assert.deepEqual(splitWords(null), []);
});
