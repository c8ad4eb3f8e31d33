import { OnceflowError } from '../errors.ts';

export class LocalClusterError extends OnceflowError {
  constructor(
    readonly code: 'JAVA_NOT_FOUND' | 'CACHE_MISSING' | 'TOOL_NOT_FOUND' | 'FETCH_FAILED' | 'PROCESS_EXITED' | 'START_TIMEOUT' | 'PORT_TAKEN' | 'NOT_RUNNING',
    message: string,
  ) {
    super(message);
  }
}
