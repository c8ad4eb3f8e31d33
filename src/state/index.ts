export { InMemoryKeyValueStore, inMemoryStoreFactory, type KeyValueStore, type StoreFactory, type StoreFactoryRequest, type StoreKind } from './store.ts';
export { TransactionalStore } from './transactional.ts';
export { windowedSerde, windowStoreKey, splitWindowStoreKey, windowStartsFor } from './windowed.ts';
export { countSerde } from './internal-serdes.ts';
export { DeadlineHeap } from './heap.ts';
