/**
 * The first hour's console (issue #44): topology/orders.ts (three sub-topologies joined by two
 * repartition topics, written in Kafka transactions) run by one worker until it is caught up. Then
 * `onceflow status` and the console must both say lag 0 although every repartition partition ends
 * with a commit marker; and at 1400×900 the page must show every node of the graph and every column
 * of the members table without scrolling, and settle so that a headless screenshot with a virtual
 * time budget completes.
 */
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { existsSync, mkdirSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import { after, test } from 'node:test';
import { Command } from 'commander';
import { describeJson } from '../../src/cli/describe.ts';
import { registerStatus, StatusError, type GroupStatus } from '../../src/cli/status.ts';
import type { LiveSnapshot } from '../../src/console/live-state.ts';
import { topologyGraph } from '../../src/console/topology-graph.ts';
import { loadTopology } from '../../src/dsl/load.ts';
import { compile } from '../../src/graph/compile.ts';
import { produceRecords } from '../../src/kafka/produce-records.ts';
import { projectRoot } from '../../src/kafka/paths.ts';
import { waitCaughtUp } from '../../src/verify/progress.ts';
import { eventually, WorkerProcess } from '../../src/verify/worker-process.ts';
import { createTopics, testCluster, uniqueName } from '../support/cluster.ts';
import { CHROMIUM, openBrowser, requireChromium, SCREENSHOTS, startConsole } from '../support/console-browser.ts';
import { freePort } from '../support/ports.ts';

const TOPOLOGY = 'topology/orders.ts';
const VIEWPORT = { width: 1400, height: 900 };

const cleanups: (() => Promise<unknown>)[] = [];
after(async () => {
  for (const c of cleanups.reverse()) await c().catch(() => undefined);
});

async function status(args: readonly string[]): Promise<string> {
  let out = '';
  const program = new Command('onceflow').exitOverride();
  registerStatus(program, { out: (t) => (out += t) });
  await program.parseAsync(['node', 'onceflow', 'status', ...args]);
  return out;
}

const order = (i: number): { key: Buffer; value: Buffer } => ({
  key: Buffer.from(`o-${i % 40}`),
  value: Buffer.from(JSON.stringify({ eventId: `e-${i}`, orderId: `o-${i % 40}`, customerId: `c-${i % 7}`, status: i % 3 === 0 ? 'CREATED' : 'PAID', version: i, amount: 5 })),
});

test('status and the console agree on lag 0 for a caught-up transactional app; the page fits 1400×900 and settles', { timeout: 300_000 }, async () => {
  requireChromium();
  const { bootstrap } = testCluster();
  const appId = uniqueName('console-orders');
  const input = `${appId}-in`;
  const output = `${appId}-out`;
  await createTopics(bootstrap, [{ name: input, partitions: 2 }, { name: output, partitions: 2 }]);
  const env = { ONCEFLOW_BOOTSTRAP: bootstrap, ONCEFLOW_ORDERS_INPUT: input, ONCEFLOW_ORDERS_OUTPUT: output };
  Object.assign(process.env, env);
  const description = describeJson(compile(await loadTopology(join(projectRoot(), TOPOLOGY)), { appId }));
  const expected = topologyGraph(description);
  const repartition = description.topics.filter((t) => t.kind === 'repartition').map((t) => t.name);
  assert.equal(repartition.length, 2, 'orders has two repartition topics');

  const metricsPort = await freePort();
  const worker = new WorkerProcess('worker', TOPOLOGY, ['--app-id', appId, '--instance-id', 'a', '--http-port', String(metricsPort)], env);
  cleanups.push(() => worker.stop());
  await worker.waitFor((e) => e.type === 'started', 90_000, 'start');
  // `status <topology>`: the app id comes from the file (orders), a group this cluster never had. Only
  // once a group exists: describing groups on a cluster that never had one crashes the admin client.
  await assert.rejects(status([TOPOLOGY, '--bootstrap', bootstrap]), (e: unknown) => e instanceof StatusError && e.groupId === 'orders');
  await produceRecords(bootstrap, input, Array.from({ length: 120 }, (_, i) => order(i)));
  await waitCaughtUp({ bootstrap, groupId: appId, plainTopics: [input], transactionalTopics: repartition, timeoutMs: 180_000, stableMs: 1_500 });

  // status, by the topology file with the deployment's app id.
  const fromStatus = JSON.parse(await status([TOPOLOGY, '--app-id', appId, '--bootstrap', bootstrap, '--json'])) as GroupStatus;
  const markers = fromStatus.partitions.filter((p) => repartition.includes(p.topic) && p.committed !== undefined && p.end > p.committed);
  assert.ok(markers.length > 0, `some repartition partition ends past its committed offset (a commit marker): ${JSON.stringify(fromStatus.partitions)}`);
  assert.deepEqual(fromStatus.partitions.filter((p) => p.lag !== 0).map((p) => `${p.topic}-${p.partition}`), [], 'status: lag 0 everywhere');
  const text = await status([TOPOLOGY, '--app-id', appId, '--bootstrap', bootstrap]);
  assert.match(text, /total lag 0/);

  const consoleProcess = await startConsole([TOPOLOGY, '--app-id', appId, '--port', '0', '--refresh-ms', '500', '--no-typecheck', '--worker-url', `http://127.0.0.1:${metricsPort}/metrics`], env);
  cleanups.push(() => consoleProcess.stop());
  let snapshot: LiveSnapshot | undefined;
  await eventually(async () => {
    snapshot = (await (await fetch(new URL('/api/state', consoleProcess.url))).json()) as LiveSnapshot | undefined;
    return (snapshot?.partitions.length ?? 0) === fromStatus.partitions.length && snapshot?.members[0]?.metrics.reachable === true;
  }, 60_000, 'the console to list every partition and the member with its metrics');
  const lagOf = (ps: readonly { topic: string; partition: number; lag: number | undefined }[]) => Object.fromEntries(ps.map((p) => [`${p.topic}-${p.partition}`, p.lag]));
  assert.deepEqual(lagOf(snapshot?.partitions ?? []), lagOf(fromStatus.partitions), 'the console shows the lag status shows');

  // The page at 1400×900: every node inside the viewport, no scrolling.
  const opened = await openBrowser(VIEWPORT);
  cleanups.push(() => opened.close());
  const page = opened.browser.pages()[0] ?? (await opened.browser.newPage());
  const pageErrors: string[] = [];
  page.on('pageerror', (e) => pageErrors.push(e.message));
  await page.goto(consoleProcess.url);
  await page.locator('#graph svg .node').first().waitFor({ timeout: 30_000 });
  await page.locator('#members tbody tr[data-reachable="true"]').first().waitFor({ timeout: 30_000 });
  mkdirSync(SCREENSHOTS, { recursive: true });
  await page.screenshot({ path: join(SCREENSHOTS, 'console-orders-1400x900.png') });
  const nodes = await page.locator('#graph svg .node').evaluateAll((all) =>
    all.map((n) => {
      const r = n.getBoundingClientRect();
      return { id: n.getAttribute('data-node-id') ?? '', left: r.left, top: r.top, right: r.right, bottom: r.bottom, label: n.querySelector('text')?.textContent ?? '' };
    }),
  );
  assert.deepEqual(nodes.map((n) => n.id).sort(), expected.nodes.map((n) => n.id).sort(), 'one drawn node per node of the topology');
  const outside = nodes.filter((n) => n.left < 0 || n.top < 0 || n.right > VIEWPORT.width || n.bottom > VIEWPORT.height);
  assert.deepEqual(outside, [], 'every node inside the 1400×900 viewport');
  assert.equal(await page.evaluate(() => window.scrollY), 0);
  // Readable names: the `name` option as given, generated names shortened, the full name in the tooltip.
  const labels = new Map(nodes.map((n) => [n.id, n.label]));
  assert.equal(labels.get('stage:customer-paid'), 'customer-paid');
  assert.equal(labels.get('stage:KSTREAM-SOURCE-0000000000'), 'source #0');
  assert.equal(await page.locator('#graph .node[data-node-id="stage:KSTREAM-SOURCE-0000000000"] title').textContent(), 'KSTREAM-SOURCE-0000000000\nsource');
  // The dead-letter topic stands apart, under a caption that says what lands there.
  assert.match((await page.locator('#graph svg .column-title').allTextContents()).join('|'), /Dead letters: a record any stage cannot process/);

  // The members table: every column, in/s and out/s included, inside the page's width, the card not scrolling.
  await page.locator('#members').scrollIntoViewIfNeeded();
  const headers = await page.locator('#members thead th').evaluateAll((all) => all.map((h) => ({ text: h.textContent ?? '', left: h.getBoundingClientRect().left, right: h.getBoundingClientRect().right })));
  assert.deepEqual(headers.map((h) => h.text), ['client id', 'host', 'state', 'partitions', 'last commit', 'commits/s', 'aborts', 'fencings', 'in/s', 'out/s']);
  const cut = headers.filter((h) => h.left < 0 || h.right > VIEWPORT.width);
  assert.deepEqual(cut, [], 'every column of the members table inside the viewport');
  const card = await page.locator('#members').evaluate((t) => ({ scroll: t.parentElement?.scrollWidth ?? 0, client: t.parentElement?.clientWidth ?? 0 }));
  assert.ok(card.scroll <= card.client, `the members card does not scroll sideways (${card.scroll} > ${card.client})`);
  await page.screenshot({ path: join(SCREENSHOTS, 'console-orders-members.png') });
  assert.deepEqual(pageErrors, [], 'no script error on the page');

  // The page settles: Chromium's own headless screenshot with a virtual time budget finishes.
  const shot = join(SCREENSHOTS, 'console-orders-virtual-time.png');
  rmSync(shot, { force: true });
  const code = await new Promise<number | null>((resolve) => {
    const chromium = spawn(CHROMIUM, ['--headless', '--no-sandbox', '--disable-gpu', `--window-size=${VIEWPORT.width},${VIEWPORT.height}`, '--virtual-time-budget=5000', `--screenshot=${shot}`, consoleProcess.url], { stdio: 'ignore' });
    const timer = setTimeout(() => chromium.kill('SIGKILL'), 90_000);
    chromium.on('exit', (exitCode) => {
      clearTimeout(timer);
      resolve(exitCode);
    });
  });
  assert.equal(code, 0, 'chromium --headless --virtual-time-budget=5000 --screenshot exits by itself');
  assert.ok(existsSync(shot), `${shot} written`);
  console.log(`console screenshots in ${SCREENSHOTS}; status partitions: ${JSON.stringify(fromStatus.partitions.map((p) => [p.topic, p.partition, p.committed, p.end, p.lag]))}`);
});
