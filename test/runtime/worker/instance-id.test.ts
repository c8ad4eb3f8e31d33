import assert from 'node:assert/strict';
import { mkdtempSync, mkdirSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { test } from 'node:test';
import { claimDefaultInstanceId, lockInstanceId } from '../../../src/runtime/worker/instance-id.ts';

const withEnv = <T>(env: Record<string, string | undefined>, fn: () => T): T => {
  const saved = Object.fromEntries(Object.keys(env).map((k) => [k, process.env[k]]));
  for (const [k, v] of Object.entries(env)) v === undefined ? delete process.env[k] : (process.env[k] = v);
  try {
    return fn();
  } finally {
    for (const [k, v] of Object.entries(saved)) v === undefined ? delete process.env[k] : (process.env[k] = v);
  }
};

test('two workers on one host get different default instance ids; a released slot is reused', () => {
  withEnv({ KUBERNETES_SERVICE_HOST: undefined, HOSTNAME: 'box.example' }, () => {
    const stateDir = mkdtempSync(join(tmpdir(), 'instance-'));
    const a = claimDefaultInstanceId({ appId: 'orders', stateDir });
    const b = claimDefaultInstanceId({ appId: 'orders', stateDir });
    assert.equal(a.instanceId, 'box.example-0');
    assert.equal(b.instanceId, 'box.example-1');
    a.release();
    const c = claimDefaultInstanceId({ appId: 'orders', stateDir });
    assert.equal(c.instanceId, 'box.example-0', 'a restart gets the same id back');
    assert.equal(claimDefaultInstanceId({ appId: 'other-app', stateDir }).instanceId, 'box.example-0', 'slots are per app');
  });
});

test('a slot whose owner process is gone is taken over', () => {
  withEnv({ KUBERNETES_SERVICE_HOST: undefined, HOSTNAME: 'box' }, () => {
    const stateDir = mkdtempSync(join(tmpdir(), 'instance-'));
    mkdirSync(join(stateDir, 'orders', '.instances'), { recursive: true });
    // pid 2^22 + 1 is above Linux's pid_max: no such process.
    writeFileSync(join(stateDir, 'orders', '.instances', 'box-0.pid'), String(4_194_305));
    assert.equal(claimDefaultInstanceId({ appId: 'orders', stateDir }).instanceId, 'box-0');
  });
});

test('on Kubernetes the pod name is the instance id', () => {
  withEnv({ KUBERNETES_SERVICE_HOST: '10.0.0.1', HOSTNAME: 'orders-2' }, () => {
    const stateDir = mkdtempSync(join(tmpdir(), 'instance-'));
    assert.equal(claimDefaultInstanceId({ appId: 'orders', stateDir }).instanceId, 'orders-2');
  });
});

test('a given instance id is locked on this host while its worker lives', () => {
  const stateDir = mkdtempSync(join(tmpdir(), 'instance-'));
  const first = lockInstanceId({ appId: 'orders', stateDir, instanceId: 'pod-a' });
  assert.ok(first, 'a free id is locked');
  assert.equal(lockInstanceId({ appId: 'orders', stateDir, instanceId: 'pod-a' }), undefined, 'a second worker of this process does not get it');
  first.release();
  assert.ok(lockInstanceId({ appId: 'orders', stateDir, instanceId: 'pod-a' }), 'released, it is free again');
});
