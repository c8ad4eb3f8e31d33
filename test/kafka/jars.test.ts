import { test } from 'node:test';
import assert from 'node:assert/strict';
import { existsSync, mkdtempSync, readdirSync } from 'node:fs';
import { homedir, tmpdir } from 'node:os';
import { join } from 'node:path';
import { ensureKafkaJars, jarCacheDir, kafkaClasspath } from '../../src/kafka/jars.ts';

test('the jar cache: ONCEFLOW_CACHE, else $XDG_CACHE_HOME/onceflow, else ~/.cache/onceflow', () => {
  assert.equal(jarCacheDir({ ONCEFLOW_CACHE: '/srv/jars', XDG_CACHE_HOME: '/x' }), '/srv/jars');
  assert.equal(jarCacheDir({ XDG_CACHE_HOME: '/x' }), '/x/onceflow');
  assert.equal(jarCacheDir({}), join(homedir(), '.cache', 'onceflow'));
});

test('without Maven an empty cache is TOOL_NOT_FOUND naming mvn, and leaves nothing that looks fetched', async () => {
  const cache = mkdtempSync(join(tmpdir(), 'onceflow-jars-'));
  const saved = { cache: process.env.ONCEFLOW_CACHE, path: process.env.PATH };
  process.env.ONCEFLOW_CACHE = cache;
  process.env.PATH = mkdtempSync(join(tmpdir(), 'onceflow-empty-path-'));
  try {
    await assert.rejects(ensureKafkaJars(() => undefined), (e: { code?: string; message: string }) => e.code === 'TOOL_NOT_FOUND' && /^mvn is not on PATH/.test(e.message));
    assert.throws(() => kafkaClasspath(), (e: { code?: string; message: string }) => e.code === 'CACHE_MISSING' && /onceflow setup/.test(e.message));
    assert.ok(!existsSync(join(cache, 'kafka', 'libs')), 'a failed fetch left kafka/libs behind');
    assert.deepEqual(readdirSync(cache).filter((f) => f !== 'kafka'), []);
  } finally {
    process.env.ONCEFLOW_CACHE = saved.cache;
    process.env.PATH = saved.path;
    if (saved.cache === undefined) delete process.env.ONCEFLOW_CACHE;
  }
});
