/**
 * The console as users start it (`onceflow console` in its own process) and Debian's Chromium,
 * installed by scripts/setup.sh, driven headless by playwright-core. A missing browser fails the
 * test that asks for it: a console nobody can open is not tested.
 */
import assert from 'node:assert/strict';
import { spawn, type ChildProcess } from 'node:child_process';
import { existsSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { chromium, type BrowserContext } from 'playwright-core';
import { projectRoot } from '../../src/kafka/paths.ts';

export const CHROMIUM = '/usr/bin/chromium';
export const SCREENSHOTS = join(projectRoot(), 'test', 'tmp', 'console');

export function requireChromium(): void {
  assert.ok(existsSync(CHROMIUM), `${CHROMIUM} is missing: run scripts/setup.sh (it installs Debian's chromium)`);
}

/** `onceflow console ...`; resolves with the URL it prints and a stop that waits for the exit. */
export function startConsole(args: readonly string[], env: Readonly<Record<string, string>>): Promise<{ url: string; child: ChildProcess; stop(): Promise<void> }> {
  const child = spawn(process.execPath, ['--import', 'tsx', 'src/cli/main.ts', 'console', ...args], { cwd: projectRoot(), env: { ...process.env, ...env }, stdio: ['ignore', 'pipe', 'pipe'] });
  const stop = async (): Promise<void> => {
    child.kill('SIGTERM');
    await new Promise((resolve) => (child.exitCode !== null ? resolve(undefined) : child.once('exit', resolve)));
  };
  let output = '';
  return new Promise((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`the console printed no URL within 60 s: ${output}`)), 60_000);
    const read = (chunk: Buffer): void => {
      output += chunk.toString();
      const url = /onceflow console for \S+: (http:\/\/\S+)/.exec(output)?.[1];
      if (url) {
        clearTimeout(timer);
        resolve({ url, child, stop });
      }
    };
    child.stdout.on('data', read);
    child.stderr.on('data', read);
    child.on('exit', (code) => reject(new Error(`the console exited (code ${code}): ${output}`)));
  });
}

/** A headless Chromium with a throw-away profile; `close` removes both. */
export async function openBrowser(viewport: { width: number; height: number }): Promise<{ browser: BrowserContext; close(): Promise<void> }> {
  requireChromium();
  const profile = mkdtempSync(join(tmpdir(), 'onceflow-chromium-'));
  const browser = await chromium.launchPersistentContext(profile, {
    executablePath: CHROMIUM,
    headless: true,
    args: ['--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run', '--disable-background-networking', '--disable-component-update', '--disable-sync'],
    viewport,
  });
  return {
    browser,
    async close() {
      await browser.close();
      rmSync(profile, { recursive: true, force: true });
    },
  };
}
