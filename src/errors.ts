/**
 * Every error onceflow raises on purpose is an OnceflowError with a stable `code`,
 * so that callers (and the CLI) can branch on it without parsing messages.
 * Each subclass lives next to the one place that raises it.
 */
export abstract class OnceflowError extends Error {
  abstract readonly code: string;
  constructor(message: string, options?: { cause?: unknown }) {
    super(message, options);
    this.name = new.target.name;
  }
}

export function isOnceflowError(e: unknown): e is OnceflowError {
  return e instanceof OnceflowError;
}

/** An HTTP server of onceflow's could not listen on its port (taken, or not allowed). */
export abstract class ListenError extends OnceflowError {
  constructor(
    message: string,
    readonly port: number,
    options?: { cause?: unknown },
  ) {
    super(message, options);
  }
}
