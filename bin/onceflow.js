#!/usr/bin/env -S node --max-semi-space-size=64
// The larger young generation: see docs/operations.md#the-nodejs-heap (fewer scavenges of the per-record garbage).
import { existsSync } from 'node:fs';

// The published package has only dist/; a git checkout (and the Docker image, which copies one) runs
// src/ directly, so an edit takes effect without a rebuild and a stale dist/ is never run. Node 20
// cannot import .ts: a checkout registers tsx first; the built CLI does so itself for the commands
// that load a topology file (src/cli/main.ts), and the others start without it.
const sources = new URL('../src/cli/main.ts', import.meta.url);
if (existsSync(sources)) {
  (await import('tsx/esm/api')).register();
  await import(sources.href);
} else {
  await import('../dist/src/cli/main.js');
}
