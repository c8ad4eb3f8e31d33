import { ListenError } from '../errors.ts';

/** The health/metrics HTTP server could not listen: the process must not run blind. */
export class ObservabilityServerError extends ListenError {
  readonly code = 'OBSERVABILITY_LISTEN_FAILED';
}
