import assert from 'node:assert/strict';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { test } from 'node:test';
import { Command } from 'commander';
import { parse } from 'yaml';
import { registerConfig, renderEffectiveConfig } from '../../src/cli/config.ts';
import { ConfigError } from '../../src/runtime/base/config.ts';

const PASSWORD = 'cfg-print-S3cret';

async function run(args: string[], env: Record<string, string>): Promise<{ out: string; err: string }> {
  let out = '';
  let err = '';
  const program = new Command('onceflow').exitOverride();
  registerConfig(program, { out: (t) => (out += t), err: (t) => (err += t) });
  const saved = { ...process.env };
  // The suite itself runs with ONCEFLOW_BOOTSTRAP set; it would (rightly) override the file.
  for (const k of Object.keys(process.env)) if (k.startsWith('ONCEFLOW_')) delete process.env[k];
  Object.assign(process.env, env);
  try {
    await program.parseAsync(['node', 'onceflow', ...args]);
  } finally {
    for (const k of Object.keys(env)) delete process.env[k];
    Object.assign(process.env, saved);
  }
  return { out, err };
}

test('config print shows the effective config with defaults, layered sources and secrets redacted', async () => {
  const dir = mkdtempSync(join(tmpdir(), 'onceflow-print-'));
  const path = join(dir, 'onceflow.yaml');
  writeFileSync(path, `bootstrap: file:9092\nappId: orders\nkafka:\n  sasl.password: ${PASSWORD}\n  sasl.username: svc\n`);
  const { out, err } = await run(['config', 'print', '--config', path, '--commit-interval-ms', '250', '--kafka', 'security.protocol=SASL_SSL', '--kafka', `ssl.key.password=${PASSWORD}`], {
    ONCEFLOW_INSTANCE_ID: 'pod-3',
    ONCEFLOW_KAFKA_SASL_MECHANISM: 'PLAIN',
    ONCEFLOW_NOT_A_SETTING: 'x',
  });
  assert.ok(!out.includes(PASSWORD) && !err.includes(PASSWORD));
  const printed = parse(out) as Record<string, unknown>;
  assert.equal(printed.bootstrap, 'file:9092');
  assert.equal(printed.instanceId, 'pod-3');
  assert.equal(printed.commitIntervalMs, 250);
  assert.equal(printed.guarantee, 'exactly_once');
  assert.equal(printed.transactionTimeoutMs, 10_000);
  assert.deepEqual(printed.kafka, { 'sasl.password': '***', 'sasl.username': 'svc', 'sasl.mechanism': 'PLAIN', 'security.protocol': 'SASL_SSL', 'ssl.key.password': '***' });
  assert.match(err, /unknown environment variable ONCEFLOW_NOT_A_SETTING/);

  const json = await run(['config', 'print', '--format', 'json', '--bootstrap', 'b:1', '--app-id', 'x'], {});
  assert.equal((JSON.parse(json.out) as { appId: string }).appId, 'x');
});

test('--show-origin comments each value with where it came from', () => {
  const { text } = renderEffectiveConfig({ env: { ONCEFLOW_BOOTSTRAP: 'b:9092', ONCEFLOW_KAFKA_ACKS: 'all' }, flags: { appId: 'a' } }, { format: 'yaml', showOrigin: true });
  assert.match(text, /^bootstrap: b:9092 # env$/m);
  assert.match(text, /^appId: a # flag$/m);
  assert.match(text, /^guarantee: exactly_once # default$/m);
  assert.match(text, /^ {2}acks: all # env$/m);
});

test('an invalid effective config fails with the schema error, the secret not in it', () => {
  assert.throws(
    () => renderEffectiveConfig({ env: { ONCEFLOW_BOOTSTRAP: 'b:9092', ONCEFLOW_APP_ID: 'a', ONCEFLOW_GUARANTEE: 'maybe', ONCEFLOW_KAFKA_SASL_PASSWORD: PASSWORD } }, { format: 'yaml' }),
    (e: unknown) => e instanceof ConfigError && /guarantee/.test(e.message) && !e.message.includes(PASSWORD),
  );
});
