import { EffectConfigError, EffectPermanentError, EffectRetriableError, httpNetworkError, httpStatusError } from './errors.ts';

/** Bounded retry: at most `maxAttempts` requests, waits doubling from `initialBackoffMs` up to `maxBackoffMs`. */
export interface HttpRetryPolicy {
  readonly maxAttempts: number;
  readonly initialBackoffMs: number;
  readonly maxBackoffMs: number;
  /** Fraction of each wait that is random (0 = fixed waits, 1 = anywhere from 0 to the wait). Default 0.5. */
  readonly jitter: number;
}

export const DEFAULT_HTTP_RETRY: HttpRetryPolicy = Object.freeze({ maxAttempts: 4, initialBackoffMs: 100, maxBackoffMs: 5000, jitter: 0.5 });

export interface HttpEffectOptions<I> {
  readonly url: string | ((input: I) => string);
  /** Default POST. */
  readonly method?: string;
  readonly headers?: Readonly<Record<string, string>>;
  readonly retry?: Partial<HttpRetryPolicy>;
  /** Per attempt. Default 10 s. */
  readonly timeoutMs?: number;
  /** Request body from the input; default JSON of the input (none when it is undefined). */
  readonly body?: (input: I) => string | undefined;
  /** Replaceable so tests can observe the waits without spending them. */
  readonly sleep?: (ms: number) => Promise<void>;
  readonly random?: () => number;
}

export interface HttpEffectResult {
  readonly status: number;
  readonly body: string;
  readonly headers: Headers;
  /** Requests sent, including the one that succeeded. */
  readonly attempts: number;
  /** The waits before attempts 2, 3, …, in ms. */
  readonly backoffsMs: readonly number[];
}

export const IDEMPOTENCY_KEY_HEADER = 'Idempotency-Key';

/** Wait before attempt `attempt + 1`; exponential, capped, with the jittered fraction drawn from `random`. */
export function backoffMs(policy: HttpRetryPolicy, attempt: number, random: () => number = Math.random): number {
  const cap = Math.min(policy.maxBackoffMs, policy.initialBackoffMs * 2 ** (attempt - 1));
  const jitter = Math.min(1, Math.max(0, policy.jitter));
  return Math.round(cap * (1 - jitter) + cap * jitter * random());
}

/** Retry-After in seconds (the HTTP-date form is rare on 429/503 from APIs and is ignored). */
function retryAfterMs(headers: Headers): number | undefined {
  const v = headers.get('retry-after');
  if (v === null || !/^\d+$/.test(v.trim())) return undefined;
  return Number(v.trim()) * 1000;
}

const sleepReal = (ms: number) => new Promise<void>((r) => setTimeout(r, ms));

/**
 * An HTTP call made safe to repeat: every attempt, and every replay of the same record, carries
 * the record's idempotency key in `Idempotency-Key`, so a server that dedupes on it applies the
 * call once. A timed-out attempt may have been applied; the retry with the same key is how the
 * caller learns the outcome without applying it twice. Without server-side dedupe on the key,
 * this is at-least-once and nothing more.
 *
 * 5xx, 408, 429, timeouts and network errors are retried within the policy, then thrown as
 * EffectRetriableError (the engine may retry the stage again, then dead-letters). Other 4xx are
 * thrown at once as EffectPermanentError (dead-lettered without retry).
 */
export function httpEffect<I = unknown>(opts: HttpEffectOptions<I>): (idempotencyKey: string, input?: I) => Promise<HttpEffectResult> {
  const policy: HttpRetryPolicy = { ...DEFAULT_HTTP_RETRY, ...opts.retry };
  if (!Number.isInteger(policy.maxAttempts) || policy.maxAttempts < 1) throw new EffectConfigError(`httpEffect: retry.maxAttempts must be an integer >= 1, got ${policy.maxAttempts}`);
  const method = (opts.method ?? 'POST').toUpperCase();
  const timeoutMs = opts.timeoutMs ?? 10_000;
  const sleep = opts.sleep ?? sleepReal;
  const random = opts.random ?? Math.random;
  const toBody = opts.body ?? ((input: I) => (input === undefined ? undefined : JSON.stringify(input)));

  return async (idempotencyKey, input) => {
    const url = typeof opts.url === 'function' ? opts.url(input as I) : opts.url;
    const body = method === 'GET' || method === 'HEAD' ? undefined : toBody(input as I);
    const headers: Record<string, string> = {
      ...(body !== undefined && opts.body === undefined ? { 'content-type': 'application/json' } : {}),
      ...opts.headers,
      [IDEMPOTENCY_KEY_HEADER]: idempotencyKey,
    };
    const backoffs: number[] = [];
    let last: EffectRetriableError | undefined;
    for (let attempt = 1; attempt <= policy.maxAttempts; attempt++) {
      let retryAfter: number | undefined;
      try {
        const res = await fetch(url, { method, headers, ...(body !== undefined ? { body } : {}), signal: AbortSignal.timeout(timeoutMs) });
        const text = await res.text();
        const err = httpStatusError(res.status, method, url, attempt, text);
        if (err === undefined) return { status: res.status, body: text, headers: res.headers, attempts: attempt, backoffsMs: backoffs };
        if (err instanceof EffectPermanentError) throw err;
        last = err;
        retryAfter = retryAfterMs(res.headers);
      } catch (e) {
        if (e instanceof EffectPermanentError) throw e;
        last = e instanceof EffectRetriableError ? e : httpNetworkError(e, method, url, attempt);
      }
      if (attempt < policy.maxAttempts) {
        // The server's Retry-After wins over our schedule, but never past the policy's cap.
        const wait = retryAfter !== undefined ? Math.min(retryAfter, policy.maxBackoffMs) : backoffMs(policy, attempt, random);
        backoffs.push(wait);
        await sleep(wait);
      }
    }
    throw last ?? httpNetworkError(new Error('no attempt made'), method, url, 0);
  };
}
