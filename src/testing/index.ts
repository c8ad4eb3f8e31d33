export { TopologyTestDriver, type TestDriverOptions } from './test-driver.ts';
export { UnknownTestTopicError, UnknownTestStoreError, DriverBusyError } from './driver-errors.ts';
export type { PipeOptions, TestRecord, TestInputTopic, TestOutputTopic } from './topic-handles.ts';
export type { DeadLetter } from './dead-letters.ts';
export type { LoggedRecord } from './topic-log.ts';
export type { TestStore, TestStoreQuery } from './store-views.ts';
export { murmur2, partitionFor } from './partitioner.ts';
