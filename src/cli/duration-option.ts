import { InvalidArgumentError } from 'commander';

const UNIT_MS: Readonly<Record<string, number>> = { ms: 1, s: 1_000, m: 60_000, h: 3_600_000, d: 86_400_000 };

/** A commander argument parser for a duration: `30d`, `12h`, `90m`, `45s`, `500ms` or a bare number of milliseconds. */
export function durationMs(value: string): number {
  const match = /^(\d+)(ms|s|m|h|d)?$/.exec(value.trim());
  if (!match) throw new InvalidArgumentError('expected a duration such as 30d, 12h, 90m, 45s or a number of milliseconds');
  return Number(match[1]) * UNIT_MS[match[2] ?? 'ms']!;
}
