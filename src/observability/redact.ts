import { SECRET_OPTION } from '../runtime/base/config.ts';

export const REDACTED = '***';

/**
 * A copy of a config-like value with every key matching SECRET_OPTION replaced, at any depth
 * (`kafka['sasl.password']`, a nested `sasl: { password }`), so no caller has to know where secrets live.
 */
export function redactDeep<T>(value: T): T {
  return walk(value, new WeakSet()) as T;
}

function walk(value: unknown, seen: WeakSet<object>): unknown {
  if (value === null || typeof value !== 'object') return value;
  if (seen.has(value)) return '[circular]';
  seen.add(value);
  if (Array.isArray(value)) return value.map((v) => walk(v, seen));
  if (Buffer.isBuffer(value)) return value;
  // An error's message and stack are not enumerable: carry them over explicitly, or they vanish.
  if (value instanceof Error) {
    const e = value as Error & { code?: unknown };
    const plain: Record<string, unknown> = { type: e.name, message: e.message };
    if (e.code !== undefined) plain.code = e.code;
    if (e.stack) plain.stack = e.stack;
    for (const [k, v] of Object.entries(e)) if (!(k in plain)) plain[k] = SECRET_OPTION.test(k) ? REDACTED : walk(v, seen);
    if (e.cause !== undefined) plain.cause = walk(e.cause, seen);
    return plain;
  }
  const out: Record<string, unknown> = {};
  for (const [k, v] of Object.entries(value)) out[k] = SECRET_OPTION.test(k) && v !== undefined ? REDACTED : walk(v, seen);
  return out;
}

/**
 * The values of every secret key in a config-like object. Key-based redaction cannot catch a secret
 * that reached a free-text field (a librdkafka error quoting its JAAS config, an exception message):
 * scrubbing the known values out of each finished line does.
 */
export function secretValues(value: unknown): string[] {
  const found = new Set<string>();
  const visit = (v: unknown, secret: boolean, seen: WeakSet<object>): void => {
    if (typeof v === 'string' || typeof v === 'number') {
      // Very short values ("1", "on") would scrub unrelated text and are not credentials anyway.
      if (secret && String(v).length >= 4) found.add(String(v));
      return;
    }
    if (v === null || typeof v !== 'object' || seen.has(v)) return;
    seen.add(v);
    for (const [k, child] of Object.entries(v)) visit(child, secret || SECRET_OPTION.test(k), seen);
  };
  visit(value, false, new WeakSet());
  return [...found];
}

/** Replaces every occurrence of each secret, also in its JSON-escaped form (it may sit inside a JSON line). */
export function scrub(text: string, secrets: Iterable<string>): string {
  let out = text;
  for (const s of secrets) {
    if (s.length === 0) continue;
    out = out.split(s).join(REDACTED);
    const escaped = JSON.stringify(s).slice(1, -1);
    if (escaped !== s) out = out.split(escaped).join(REDACTED);
  }
  return out;
}
