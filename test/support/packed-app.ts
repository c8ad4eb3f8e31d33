/** The packed package's scratch project for test/package/pack-install.test.ts: its lockfile and the sources it runs. */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { projectRoot } from '../../src/kafka/paths.ts';

const root = projectRoot();
export const pkg = JSON.parse(readFileSync(join(root, 'package.json'), 'utf8')) as { name: string; version: string; dependencies: Record<string, string>; optionalDependencies?: Record<string, string>; bin: Record<string, string> };

export interface PackResult {
  readonly filename: string;
  readonly size: number;
  readonly unpackedSize: number;
  readonly entryCount: number;
  readonly integrity: string;
  readonly files: readonly { readonly path: string }[];
}

interface LockEntry {
  readonly dev?: boolean;
  readonly [field: string]: unknown;
}

/**
 * The scratch project's lockfile: onceflow from the tarball plus the repository's own locked
 * production dependencies. With it `npm ci` installs the versions the suite ran against, from the npm
 * cache, without asking the registry to resolve a single range.
 */
export function scratchLockfile(packed: PackResult): object {
  const repoLock = JSON.parse(readFileSync(join(root, 'package-lock.json'), 'utf8')) as { packages: Record<string, LockEntry> };
  const deps = Object.entries(repoLock.packages).filter(([path, entry]) => path !== '' && entry.dev !== true);
  return {
    name: 'scratch',
    lockfileVersion: 3,
    requires: true,
    packages: {
      '': { name: 'scratch', dependencies: { [pkg.name]: `file:${packed.filename}` } },
      [`node_modules/${pkg.name}`]: { version: pkg.version, resolved: `file:${packed.filename}`, integrity: packed.integrity, dependencies: pkg.dependencies, ...(pkg.optionalDependencies ? { optionalDependencies: pkg.optionalDependencies } : {}), bin: pkg.bin },
      ...Object.fromEntries(deps),
    },
  };
}

export const topology = `import { TopologyBuilder, jsonSerde, stringSerde } from 'onceflow';

interface Order { readonly customer: string; readonly amount: number }

const app = new TopologyBuilder({ appId: 'scratch-shop' });
app
  .stream('orders', { key: stringSerde, value: jsonSerde<Order>() })
  .groupBy((_k, o) => o.customer, { key: stringSerde })
  .aggregate(() => 0, (_k, o, total) => total + o.amount, { state: jsonSerde<number>(), name: 'spent' })
  .toStream()
  .to('spent-by-customer', { key: stringSerde, value: jsonSerde<number>() });
export default app;
`;

export const plainNode = `import { TopologyBuilder, compile, jsonSerde, stringSerde } from 'onceflow';
import { TopologyTestDriver } from 'onceflow/testing';
import { upsert } from 'onceflow/effects';

const app = new TopologyBuilder({ appId: 'shop' });
app
  .stream('orders', { key: stringSerde, value: jsonSerde() })
  .filter((_k, o) => o.status === 'PAID')
  .groupBy((_k, o) => o.customer, { key: stringSerde })
  .aggregate(() => 0, (_k, o, total) => total + o.amount, { state: jsonSerde(), name: 'paid' })
  .toStream()
  .to('totals', { key: stringSerde, value: jsonSerde() });

const driver = new TopologyTestDriver(app);
const orders = driver.input('orders');
orders.pipe('o1', { customer: 'c1', status: 'PAID', amount: 5 });
orders.pipe('o2', { customer: 'c1', status: 'OPEN', amount: 7 });
orders.pipe('o3', { customer: 'c1', status: 'PAID', amount: 2 });

let internals;
try {
  await import('onceflow/dist/src/runtime/task.js');
  internals = 'importable';
} catch (e) {
  internals = e.code;
}
console.log(JSON.stringify({
  topics: compile(app).topics.map((t) => t.name),
  totals: driver.output('totals').readKeyValues(),
  upsert: typeof upsert,
  internals,
}));
`;

export const strictTs = `import { TopologyBuilder, compile, jsonSerde, stringSerde, type Serde } from 'onceflow';
import { TopologyTestDriver, type TestRecord } from 'onceflow/testing';
import { upsert, type UpsertSpec } from 'onceflow/effects';

interface Order { readonly customer: string; readonly status: 'PAID' | 'OPEN'; readonly amount: number }

const orderSerde: Serde<Order> = jsonSerde<Order>();
const app = new TopologyBuilder({ appId: 'shop' });
app
  .stream('orders', { key: stringSerde, value: orderSerde })
  .filter((_k, o) => o.status === 'PAID')
  .groupBy((_k, o) => o.customer, { key: stringSerde })
  .aggregate(() => 0, (_k, o, total) => total + o.amount, { state: jsonSerde<number>(), name: 'paid' })
  .toStream()
  .to('totals', { key: stringSerde, value: jsonSerde<number>() });

// @ts-expect-error the value type comes from the serde, so a field Order lacks is an error (and the API is not \`any\`)
app.stream('returns', { key: stringSerde, value: orderSerde }).filter((_k, o) => o.refunded);

const topics: readonly string[] = compile(app).topics.map((t) => t.name);
const first: TestRecord<string, number> | undefined = new TopologyTestDriver(app).output<string, number>('totals').readRecords()[0];
const spec: UpsertSpec = { table: 'totals', columns: ['total'] };
export const checked = [topics, first, spec, upsert] as const;
`;

/** A user's test of `topology`, saved as shop.ts beside it: what the README's `node --import tsx --test` runs. */
export const driverTest = `import { test } from 'node:test';
import assert from 'node:assert/strict';
import { TopologyTestDriver } from 'onceflow/testing';
import app from './shop.ts';

test('sums what each customer spent', () => {
  const driver = new TopologyTestDriver(app);
  driver.input('orders').pipe('o1', { customer: 'c1', amount: 5 });
  driver.input('orders').pipe('o2', { customer: 'c1', amount: 2 });
  assert.deepEqual(driver.output('spent-by-customer').readKeyValues(), [['c1', 5], ['c1', 7]]);
});
`;
