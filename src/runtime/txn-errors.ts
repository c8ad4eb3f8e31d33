// Kept so that existing imports keep working: the classification lives in transaction/kafka-errors.ts,
// the worker's own errors in errors.ts.
export { classifyTxnError, describeKafkaError, isFencing, type TxnFailure } from './transaction/kafka-errors.ts';
export { WorkerError } from './errors.ts';
