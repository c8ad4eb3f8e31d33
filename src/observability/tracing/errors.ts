import { OnceflowError } from '../../errors.ts';

/** Tracing is configured on, but the optional OpenTelemetry SDK packages are not installed. */
export class TracingSdkMissingError extends OnceflowError {
  readonly code = 'TRACING_SDK_MISSING';
}
