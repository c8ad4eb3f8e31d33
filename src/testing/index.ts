export { TopologyTestDriver, UnknownTestTopicError, UnknownTestStoreError, DriverBusyError } from './test-driver.ts';
export type { TestDriverOptions, PipeOptions, TestRecord, DeadLetter, LoggedRecord, TestInputTopic, TestOutputTopic, TestStore, TestStoreQuery } from './test-driver.ts';
export { murmur2, partitionFor } from './partitioner.ts';
