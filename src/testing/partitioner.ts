// The driver places keys as the worker's producer does; the partitioner itself lives in core, which the runtime shares.
export { murmur2, partitionFor } from '../core/partitioner.ts';
