import assert from 'node:assert/strict';
import { test } from 'node:test';
import { loadTopology } from '../../src/dsl/load.ts';
import { compile } from '../../src/graph/compile.ts';
import { aclsForTopology, formatAcls, parseAcls, type AclEntry } from '../../src/kafka/acls.ts';

const line = (a: AclEntry): string => [a.principal, a.operation, a.resourceType, a.patternType, a.name].join(' ');

test('the orders topology needs READ on its input and group, WRITE on its output, its internal topics and its transactional ids, nothing more', async () => {
  const topology = compile(await loadTopology('topology/orders.ts'), { appId: 'shop' });
  const acls = aclsForTopology(topology, { principal: 'User:orders' });
  assert.deepEqual(acls.map(line), [
    'User:orders READ TOPIC LITERAL orders',
    'User:orders WRITE TOPIC LITERAL customer-paid-totals',
    'User:orders DESCRIBE TOPIC LITERAL customer-paid-totals',
    'User:orders READ TOPIC PREFIXED shop-',
    'User:orders WRITE TOPIC PREFIXED shop-',
    'User:orders CREATE TOPIC PREFIXED shop-',
    'User:orders READ GROUP LITERAL shop',
    'User:orders WRITE TRANSACTIONAL_ID PREFIXED shop-',
    'User:orders DESCRIBE TRANSACTIONAL_ID PREFIXED shop-',
  ]);
  // Every internal topic (changelogs, repartitions, dead letters) falls under the one prefix grant.
  for (const t of topology.topics.filter((t) => t.internal)) assert.ok(t.name.startsWith('shop-'), t.name);
  assert.ok(!acls.some((a) => a.resourceType === 'CLUSTER'), 'no cluster-wide grant');
});

test('a dead-letter topic the topology names gets its own literal WRITE grant', async () => {
  const { TopologyBuilder } = await import('../../src/dsl/topology-builder.ts');
  const { stringSerde } = await import('../../src/serdes/index.ts');
  const app = new TopologyBuilder({ appId: 'copy', deadLetterTopic: 'all-dead-letters' });
  app.stream('in', { key: stringSerde, value: stringSerde }).to('out', { key: stringSerde, value: stringSerde });
  const acls = aclsForTopology(compile(app), { principal: 'User:copy' }).map(line);
  assert.ok(acls.includes('User:copy WRITE TOPIC LITERAL all-dead-letters'), acls.join('\n'));
  // No changelog, repartition or dead-letter topic of its own: it creates only its topology record, copy-topology.
  assert.deepEqual(acls.filter((a) => a.includes('CREATE')), ['User:copy CREATE TOPIC PREFIXED copy-']);
});

test('the printed list reads back to the same ACLs, comments and blank lines skipped', async () => {
  const acls = aclsForTopology(compile(await loadTopology('topology/word-count.ts')), { principal: 'User:wc' });
  const text = formatAcls(acls);
  assert.match(text, /^# input topic$/m);
  assert.deepEqual(parseAcls(`\n${text}\n`).map(line), acls.map(line));
});

test('malformed principals and lines are ACL_SPEC_INVALID errors naming the problem', () => {
  assert.throws(() => parseAcls('User:x READ TOPIC LITERAL'), (e: Error & { code?: string }) => e.code === 'ACL_SPEC_INVALID' && /line 1/.test(e.message));
  assert.throws(() => parseAcls('User:x EAT TOPIC LITERAL t'), (e: Error & { code?: string }) => e.code === 'ACL_SPEC_INVALID' && /operation "EAT"/.test(e.message));
});
