import { spawn } from 'node:child_process';
import { closeSync, existsSync, openSync, readFileSync } from 'node:fs';
import { setTimeout as sleep } from 'node:timers/promises';
import { LocalClusterError } from './errors.ts';

// The broker and the registry run as detached JVMs that outlive the command that started them, each
// leading its own process group; dev.json records their pids for the commands that stop them.

export function spawnDetached(cmd: string, args: string[], logFile: string, cwd: string): number {
  const fd = openSync(logFile, 'a');
  const child = spawn(cmd, args, { cwd, detached: true, stdio: ['ignore', fd, fd] });
  closeSync(fd);
  child.unref();
  if (child.pid === undefined) throw new LocalClusterError('PROCESS_EXITED', `${cmd} did not start`);
  return child.pid;
}

export async function waitFor(what: string, pid: number, logFile: string, timeoutMs: number, ready: () => Promise<boolean>): Promise<number> {
  const started = Date.now();
  for (;;) {
    if (!isAlive(pid)) {
      throw new LocalClusterError('PROCESS_EXITED', `${what} exited during start-up. Last lines of ${logFile}:\n${tail(logFile)}`);
    }
    if (await ready().catch(() => false)) return Date.now() - started;
    if (Date.now() - started > timeoutMs) {
      throw new LocalClusterError('START_TIMEOUT', `${what} did not answer within ${timeoutMs} ms. Last lines of ${logFile}:\n${tail(logFile)}`);
    }
    await sleep(250);
  }
}

function tail(file: string, lines = 30): string {
  if (!existsSync(file)) return '(no log)';
  return readFileSync(file, 'utf8').split('\n').slice(-lines).join('\n');
}

export function isAlive(pid: number): boolean {
  // 0 is a stopped cluster's record; signalling it would ask about this process's own group.
  if (pid <= 0) return false;
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
}

export function killQuietly(pid: number, signal: NodeJS.Signals = 'SIGTERM'): void {
  if (pid <= 0) return;
  try {
    // Negative pid: the whole process group the detached child leads.
    process.kill(-pid, signal);
  } catch {
    try {
      process.kill(pid, signal);
    } catch {
      /* already gone */
    }
  }
}

export async function stopProcess(pid: number, graceMs = 15_000): Promise<void> {
  if (pid <= 0 || !isAlive(pid)) return;
  killQuietly(pid, 'SIGTERM');
  const deadline = Date.now() + graceMs;
  while (isAlive(pid) && Date.now() < deadline) await sleep(100);
  if (isAlive(pid)) killQuietly(pid, 'SIGKILL');
  while (isAlive(pid)) await sleep(50);
}
