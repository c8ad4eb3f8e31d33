#!/usr/bin/env node
// onceflow ships TypeScript sources; tsx compiles them on load so users need no build step.
import { register } from 'tsx/esm/api';

register();
await import('../src/cli/main.ts');
