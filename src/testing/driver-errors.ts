import { OnceflowError } from '../errors.ts';

export class UnknownTestTopicError extends OnceflowError {
  readonly code = 'UNKNOWN_TEST_TOPIC';
  constructor(topic: string, role: 'input' | 'output', known: readonly string[]) {
    super(`${JSON.stringify(topic)} is not an ${role} topic of this topology; ${role} topics: ${known.join(', ') || '(none)'}`);
  }
}

export class UnknownTestStoreError extends OnceflowError {
  readonly code = 'UNKNOWN_TEST_STORE';
  constructor(store: string, known: readonly string[]) {
    super(`${JSON.stringify(store)} is not a store of this topology; stores: ${known.join(', ') || '(none)'}`);
  }
}

export class DriverBusyError extends OnceflowError {
  readonly code = 'DRIVER_BUSY';
  constructor() {
    super('the driver is still processing; await the promise the previous call returned');
  }
}
