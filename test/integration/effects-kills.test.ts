import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { DEBIT_MODES } from '../../processors/payments.ts';
import { runEffectsChaos } from '../../src/verify/effects-chaos.ts';
import { PG_URL } from '../effects/pg.ts';
import { testCluster } from '../support/cluster.ts';

const RECORDS = 150;
const KILLS = 2;

// Each incarnation but the last dies after its first batch of effects and before that batch's commit.
// One mode at a time: each already runs a worker and its restarts, and the suite shares 2 cores with other files.
describe('effects outside Kafka under SIGKILLs', () => {
for (const mode of DEBIT_MODES) {
  const naive = mode.startsWith('naive-');
  test(`${mode}: ${KILLS} SIGKILLs between the effect and the commit ${naive ? 'repeat the effect' : 'leave exactly one effect per record'}; Kafka's output stays exact`, async () => {
    const r = await runEffectsChaos({ bootstrap: testCluster().bootstrap, pgUrl: PG_URL, mode, records: RECORDS, kills: KILLS });
    console.log(`${mode}: ${r.records} records, ${r.kills} kills: ${r.effects} effects landed (${r.duplicateEffects} duplicates)${r.calls === undefined ? '' : `, ${r.calls} calls`}, balance drift ${r.balanceDrift}, ${r.outputRecords} outputs`);
    assert.equal(r.outputRecords, RECORDS, 'one committed output per input');
    assert.equal(r.outputDuplicates, 0);
    if (naive) {
      assert.ok(r.duplicateEffects > 0, 'the replayed batches were applied again');
      assert.ok(r.effects > r.records, 'more than one effect per input record');
      assert.ok(r.balanceDrift > 0, 'balances are off');
    } else {
      assert.equal(r.effects, RECORDS, 'exactly one effect per record');
      assert.equal(r.balanceDrift, 0, 'balances equal the expected ones');
      if (r.calls !== undefined) assert.ok(r.calls > r.records, 'the replays did call again, and the key deduped them');
    }
  });
}
});
