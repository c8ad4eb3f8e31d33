import { ListenError } from '../errors.ts';

/** The console's HTTP server could not listen (port taken, no permission). */
export class ConsoleServerError extends ListenError {
  readonly code = 'CONSOLE_LISTEN_FAILED';
}
