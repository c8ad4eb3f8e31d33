import assert from 'node:assert/strict';
import { test } from 'node:test';
import { prng } from '../../../src/verify/orders-input.ts';
import { atShareOfFeed, runInTimeOrder, spreadOverFeed, type FaultEvent } from '../../../src/verify/chaos/schedule.ts';

const noop = async (): Promise<void> => undefined;

test('spreadOverFeed draws one moment per fault, in order, within the feed: one seed, one schedule', () => {
  const moments = (seed: number) => spreadOverFeed({ random: prng(seed), feedMs: 10_000 }, 5, () => noop).map((event) => event.at);
  const drawn = moments(7);
  assert.equal(drawn.length, 5);
  assert.ok(drawn.every((at) => at >= 0 && at < 10_000));
  assert.deepEqual(moments(7), drawn);
  const random = prng(7);
  assert.deepEqual(drawn, Array.from({ length: 5 }, () => random() * 10_000), 'each fault draws its moment from the shared stream, the first fault first');
  assert.notDeepEqual(moments(8), drawn);
});

test('spreadOverFeed hands each fault its index, and draws nothing when there is none', () => {
  let draws = 0;
  const timeline = {
    random: () => {
      draws++;
      return 0.5;
    },
    feedMs: 1_000,
  };
  assert.deepEqual(spreadOverFeed(timeline, 0, () => noop), []);
  assert.equal(draws, 0);
  const indexes: number[] = [];
  spreadOverFeed(timeline, 3, (index) => {
    indexes.push(index);
    return noop;
  });
  assert.deepEqual(indexes, [0, 1, 2]);
});

test('runInTimeOrder runs the faults one at a time in the order they are due, ties in the order given, each not before its moment', async () => {
  const ran: string[] = [];
  const start = Date.now();
  const at = (name: string, due: number): FaultEvent => ({
    at: due,
    run: async () => {
      assert.ok(Date.now() - start >= due - 5, `${name} ran at ${Date.now() - start} ms, due at ${due}`);
      ran.push(name);
    },
  });
  const timeline = { random: () => 0, feedMs: 200 };
  await runInTimeOrder([at('late', 120), atShareOfFeed(timeline, 0.3, async () => void ran.push('first at 60')), at('early', 20), atShareOfFeed(timeline, 0.3, async () => void ran.push('second at 60'))]);
  assert.deepEqual(ran, ['early', 'first at 60', 'second at 60', 'late']);
});

test('runInTimeOrder: a fault that runs long delays the next instead of overlapping it', async () => {
  const ran: string[] = [];
  let running = false;
  const fault = (name: string, due: number, takesMs: number): FaultEvent => ({
    at: due,
    run: async () => {
      assert.equal(running, false, `${name} started while another ran`);
      running = true;
      await new Promise((resolve) => setTimeout(resolve, takesMs));
      running = false;
      ran.push(name);
    },
  });
  await runInTimeOrder([fault('long', 0, 60), fault('next', 10, 0)]);
  assert.deepEqual(ran, ['long', 'next']);
});
