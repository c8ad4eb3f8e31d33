#!/usr/bin/env -S node --max-semi-space-size=64
// The larger young generation: see docs/operations.md#the-nodejs-heap (fewer scavenges of the per-record garbage).
// Topology files are TypeScript and Node 20 cannot import .ts, so tsx is registered before any is loaded.
import { existsSync } from 'node:fs';
import { register } from 'tsx/esm/api';

register();
// The published package has only dist/; a git checkout (and the Docker image, which copies one) runs
// src/ directly, so an edit takes effect without a rebuild and a stale dist/ is never run.
const sources = new URL('../src/cli/main.ts', import.meta.url);
await import(existsSync(sources) ? sources.href : '../dist/src/cli/main.js');
