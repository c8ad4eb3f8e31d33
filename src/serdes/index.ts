export type { Serde, SerdeContext, SerdeEnvironment } from './serde.ts';
export { stringSerde, bytesSerde } from './basic.ts';
export { jsonSerde } from './json.ts';
