import { test } from 'node:test';
import assert from 'node:assert/strict';
import { decodeHistory, encodeHistory, putVersion, valueAsOf, latestValue, VersionHistoryInvalidError, type Version } from '../../src/state/versioned.ts';

const v = (validFrom: number, value: string | null): Version => ({ validFrom, value: value === null ? null : Buffer.from(value) });
const text = (versions: readonly Version[] | undefined) => versions?.map((x) => [x.validFrom, x.value?.toString() ?? null]);

function putAll(puts: readonly Version[], horizon = Number.NEGATIVE_INFINITY): readonly Version[] | undefined {
  let history: readonly Version[] | undefined = [];
  for (const p of puts) {
    const r = putVersion(history ?? [], p, horizon);
    if (r.stored) history = r.history;
  }
  return history;
}

test('a history round-trips through its bytes, deletions and empty values included', () => {
  const versions = [v(30, 'c'), v(20, null), v(10, ''), v(-5, 'a')];
  assert.deepEqual(text(decodeHistory(encodeHistory(versions))), text(versions));
});

test('an out-of-order put goes into the history in its place, not over the latest; a put at an existing timestamp replaces that version', () => {
  const first = putVersion([], v(10, 'b10'), Number.NEGATIVE_INFINITY);
  assert.ok(first.stored && first.latest);
  const late = putVersion(first.history!, v(5, 'b5'), Number.NEGATIVE_INFINITY);
  assert.ok(late.stored && !late.latest, 'an older version is not the latest');
  assert.deepEqual(text(late.history), [[10, 'b10'], [5, 'b5']]);
  const again = putVersion(late.history!, v(10, 'b10bis'), Number.NEGATIVE_INFINITY);
  assert.ok(again.stored && again.latest);
  assert.deepEqual(text(again.history), [[10, 'b10bis'], [5, 'b5']]);
});

test('valueAsOf answers the version valid at a time: none before the first, none inside a deletion, none behind the horizon', () => {
  const bytes = encodeHistory(putAll([v(0, 'b0'), v(3, 'b3'), v(6, null), v(9, 'b9')])!);
  const at = (t: number, horizon = Number.NEGATIVE_INFINITY) => valueAsOf(bytes, t, horizon)?.toString();
  assert.equal(at(-1), undefined);
  assert.equal(at(0), 'b0');
  assert.equal(at(2), 'b0');
  assert.equal(at(3), 'b3');
  assert.equal(at(7), undefined, 'deleted from 6 to 9');
  assert.equal(at(100), 'b9');
  assert.equal(at(2, 5), undefined, 'a time behind the horizon is not answered');
  assert.equal(latestValue(bytes)?.toString(), 'b9');
});

test('versions that stopped being valid before the horizon are dropped; the one valid at the horizon stays; a put behind it is refused', () => {
  const history = putAll([v(0, 'b0'), v(10, 'b10'), v(20, 'b20')]);
  const kept = putVersion(history!, v(30, 'b30'), 15);
  assert.ok(kept.stored);
  assert.deepEqual(text(kept.history), [[30, 'b30'], [20, 'b20'], [10, 'b10']], 'b10 is valid at 15, b0 ended at 10');
  assert.deepEqual(putVersion(kept.history!, v(14, 'old'), 15), { stored: false });
});

test('a deletion is kept while a put could still land behind it; once past the horizon with nothing newer the key goes', () => {
  const deleted = putAll([v(0, 'b0'), v(10, null)])!;
  const before = putVersion(deleted, v(5, 'b5'), 5);
  assert.ok(before.stored && !before.latest, 'the deletion at 10 is newer than 5');
  assert.deepEqual(text(before.history), [[10, null], [5, 'b5']], 'b0 ended at 5, the horizon');
  const gone = putVersion(deleted, v(11, null), 12);
  assert.deepEqual(gone, { stored: false });
  const expired = putVersion(deleted, v(20, null), 20);
  assert.ok(expired.stored);
  assert.equal(expired.history, undefined, 'only deletions at or behind the horizon: nothing to keep');
});

test('bytes that are not a history fail with VERSION_HISTORY_INVALID', () => {
  assert.throws(() => decodeHistory(Buffer.from('{"not":"a history"}')), (e: unknown) => e instanceof VersionHistoryInvalidError && e.code === 'VERSION_HISTORY_INVALID');
});
