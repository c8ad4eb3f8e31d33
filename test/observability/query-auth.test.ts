import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, test } from 'node:test';
import { renderEffectiveConfig } from '../../src/cli/config.ts';
import { resolveConfigSources } from '../../src/cli/config-sources.ts';
import { TopologyBuilder } from '../../src/dsl/topology-builder.ts';
import { compile } from '../../src/graph/compile.ts';
import { startObservability, type ObservabilityServer } from '../../src/observability/health.ts';
import { bearerMatches } from '../../src/observability/query-auth.ts';
import { queryAuthHeaders } from '../../src/runtime/queries/query-auth-header.ts';
import { ConfigError, parseWorkerConfig } from '../../src/runtime/base/config.ts';
import { Worker } from '../../src/runtime/worker/worker.ts';
import { stringSerde } from '../../src/serdes/index.ts';

const TOKEN = 'query-token-4f9a0c2e7b1d';
const stateDir = mkdtempSync(join(tmpdir(), 'onceflow-query-auth-'));
after(() => rmSync(stateDir, { recursive: true, force: true }));

/** A real worker with one store, never started: /stores answers from its compiled topology, without a broker. */
async function serve(queryToken: string | undefined): Promise<ObservabilityServer> {
  const app = new TopologyBuilder({ appId: 'counts' });
  app.stream('words', { key: stringSerde, value: stringSerde }).groupByKey().count({ name: 'counts' }).toStream().to('word-counts');
  const worker = new Worker(compile(app), { bootstrap: '127.0.0.1:1', appId: 'counts', instanceId: `w-${queryToken === undefined ? 'open' : 'guarded'}`, stateDir, ...(queryToken ? { queryToken } : {}) });
  return startObservability(worker, { port: 0, host: '127.0.0.1', processMetrics: false });
}

async function get(server: ObservabilityServer, path: string, authorization?: string): Promise<{ status: number; body: string; challenge: string | null }> {
  const res = await fetch(`http://127.0.0.1:${server.port}${path}`, { headers: authorization === undefined ? {} : { authorization } });
  return { status: res.status, body: await res.text(), challenge: res.headers.get('www-authenticate') };
}

test('with a queryToken, the store routes answer 401 without the bearer token and 200 with it; probes and metrics stay open', async () => {
  const server = await serve(TOKEN);
  try {
    for (const path of ['/stores', '/stores/counts/k', '/stores/counts?prefix=a', '/metadata/counts/k']) {
      const refused = await get(server, path);
      assert.equal(refused.status, 401, path);
      assert.equal(refused.challenge, 'Bearer realm="onceflow stores"');
      assert.doesNotMatch(refused.body, new RegExp(TOKEN));
    }
    for (const wrong of [`Bearer ${TOKEN}x`, `Bearer ${TOKEN.slice(0, -1)}`, TOKEN, `Basic ${TOKEN}`, 'Bearer ', `Bearer ${TOKEN} extra`]) {
      assert.equal((await get(server, '/stores', wrong)).status, 401, wrong);
    }
    const allowed = await get(server, '/stores', `Bearer ${TOKEN}`);
    assert.equal(allowed.status, 200);
    assert.deepEqual(JSON.parse(allowed.body), { stores: [{ name: 'counts', windowed: false }] });
    assert.equal((await get(server, '/stores', `bearer  ${TOKEN}`)).status, 200, 'the scheme is case-insensitive (RFC 7235)');

    assert.equal((await get(server, '/metrics')).status, 200);
    assert.equal((await get(server, '/healthz')).status, 200);
    assert.equal((await get(server, '/readyz')).status, 503, 'not started: unready, not unauthorized');
    assert.equal((await get(server, '/nope')).status, 404);
  } finally {
    await server.close();
  }
});

test('without a queryToken the store routes stay open, as before', async () => {
  const server = await serve(undefined);
  try {
    assert.equal((await get(server, '/stores')).status, 200);
  } finally {
    await server.close();
  }
});

test('bearerMatches and queryAuthHeaders agree with each other', () => {
  assert.equal(bearerMatches(queryAuthHeaders(TOKEN).authorization, TOKEN), true);
  assert.equal(bearerMatches(undefined, TOKEN), false);
  assert.equal(bearerMatches('', TOKEN), false);
  assert.deepEqual(queryAuthHeaders(undefined), {});
});

test('queryToken is read from ONCEFLOW_QUERY_TOKEN and --query-token, validated by the schema, and never printed', () => {
  const fromEnv = resolveConfigSources({ env: { ONCEFLOW_BOOTSTRAP: 'b:9092', ONCEFLOW_APP_ID: 'a', ONCEFLOW_QUERY_TOKEN: TOKEN } });
  assert.equal(fromEnv.origin.queryToken, 'env');
  assert.equal(parseWorkerConfig(fromEnv.input).queryToken, TOKEN);
  const fromFlag = resolveConfigSources({ env: { ONCEFLOW_QUERY_TOKEN: TOKEN }, flags: { bootstrap: 'b:9092', appId: 'a', queryToken: `${TOKEN}-flag` } });
  assert.equal(parseWorkerConfig(fromFlag.input).queryToken, `${TOKEN}-flag`);

  for (const [bad, why] of [['short', /at least 16 characters/], ['has a space in it 0123', /printable ASCII without spaces/]] as const) {
    assert.throws(
      () => parseWorkerConfig({ bootstrap: 'b:9092', appId: 'a', queryToken: bad }),
      (e: unknown) => e instanceof ConfigError && e.issues.some((i) => i.field === 'queryToken' && why.test(i.message)) && !e.message.includes(bad),
    );
  }
  const { text } = renderEffectiveConfig({ env: { ONCEFLOW_BOOTSTRAP: 'b:9092', ONCEFLOW_APP_ID: 'a', ONCEFLOW_QUERY_TOKEN: TOKEN } }, { format: 'json' });
  assert.equal((JSON.parse(text) as { queryToken: string }).queryToken, '***');
  assert.doesNotMatch(text, new RegExp(TOKEN));
});
