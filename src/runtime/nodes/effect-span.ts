import type { EffectSpan } from '../../observability/tracing/port.ts';
import { isThenable, type Step } from './step.ts';

/**
 * An effect stage's call under `span` (tracing on): the span ends when the call settles, with its
 * error if it failed, and `next` runs after, as without tracing. Apart from the untraced path so
 * that one allocates nothing for tracing.
 */
export function callInSpan(span: EffectSpan, call: () => unknown, next: () => Step): Step {
  let result: unknown;
  try {
    result = call();
  } catch (e) {
    span.end(e);
    throw e;
  }
  if (!isThenable(result)) {
    span.end();
    return next();
  }
  return Promise.resolve(result).then(
    () => {
      span.end();
      return next();
    },
    (e: unknown) => {
      span.end(e);
      throw e;
    },
  );
}
