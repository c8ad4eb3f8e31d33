import assert from 'node:assert/strict';
import { test } from 'node:test';
import { readableName } from '../../src/console/topology-graph.ts';

test('readableName: generated names shortened wherever they stand, given names unchanged', () => {
  assert.equal(readableName('KSTREAM-SOURCE-0000000002'), 'source #2');
  assert.equal(readableName('KSTREAM-KEY-SELECT-0000000012'), 'key-select #12');
  assert.equal(readableName('KTABLE-TOSTREAM-0000000006'), 'tostream #6');
  assert.equal(readableName('KSTREAM-AGGREGATE-STATE-STORE-0000000005'), 'aggregate #5');
  assert.equal(readableName('orders-KSTREAM-AGGREGATE-STATE-STORE-0000000005-changelog'), 'orders-aggregate #5-changelog');
  assert.equal(readableName('order-versions-repartition-sink'), 'order-versions-repartition-sink');
  assert.equal(readableName('customer-paid'), 'customer-paid');
});
