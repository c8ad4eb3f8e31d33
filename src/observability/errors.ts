import { OnceflowError } from '../errors.ts';

/** The health/metrics HTTP server could not listen: the process must not run blind. */
export class ObservabilityServerError extends OnceflowError {
  readonly code = 'OBSERVABILITY_LISTEN_FAILED';
  constructor(
    message: string,
    readonly port: number,
    options?: { cause?: unknown },
  ) {
    super(message, options);
  }
}
