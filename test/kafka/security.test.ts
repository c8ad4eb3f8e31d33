import assert from 'node:assert/strict';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { test } from 'node:test';
import { devConnection } from '../../src/cli/connection.ts';
import { adminClientOptions, DevCredentialsMissingError } from '../../src/kafka/security.ts';

const secureInfo = (dir: string) => ({ caLocation: join(dir, 'tls', 'ca.crt'), adminUser: 'admin', adminPasswordFile: join(dir, 'admin.password'), adminCommandConfig: join(dir, 'admin.properties') });

test('a missing admin password file is DEV_CREDENTIALS_MISSING naming the file and `dev up --secure`', () => {
  const dir = mkdtempSync(join(tmpdir(), 'onceflow-secure-'));
  writeFileSync(join(dir, 'dev.json'), JSON.stringify({ bootstrap: '127.0.0.1:9093', brokerPid: 1, dir, secure: secureInfo(dir) }));
  const named = (e: unknown) =>
    e instanceof DevCredentialsMissingError && e.code === 'DEV_CREDENTIALS_MISSING' && e.message.includes(join(dir, 'admin.password')) && /ENOENT/.test(e.message) && e.message.includes('onceflow dev up --secure');
  assert.throws(() => devConnection(dir), named);
  assert.throws(() => adminClientOptions(secureInfo(dir)), named);
});

test('a readable admin password file gives SCRAM over TLS as the admin', () => {
  const dir = mkdtempSync(join(tmpdir(), 'onceflow-secure-'));
  writeFileSync(join(dir, 'admin.password'), 'hunter2\n');
  const options = adminClientOptions(secureInfo(dir));
  assert.equal(options['sasl.password'], 'hunter2');
  assert.equal(options['security.protocol'], 'SASL_SSL');
});
