export type { Serde, SerdeContext, SerdeEnvironment } from './serde.ts';
export { stringSerde, bytesSerde } from './basic.ts';
export { jsonSerde, JsonInvalidError, ValueRejectedError } from './json.ts';
export type { JsonSerdeOptions, JsonValidator } from './json.ts';
export { SerdeError, NullValueError, ValueInvalidError, SerdeNotPreparedError } from './errors.ts';
export type { SerdeOperation } from './errors.ts';
export {
  avroSerde,
  AvroTruncatedError,
  AvroTrailingBytesError,
  AvroInvalidError,
  AvroLongUnsafeError,
} from './avro.ts';
export type { AvroSerdeOptions } from './avro.ts';
export { AvroSchemaError } from './avro-types.ts';
export type { AvroLongMode, AvroSchemaDefinition, AvroSchemaSource } from './avro-types.ts';
export {
  registryAvroSerde,
  WireMagicByteError,
  WireHeaderTruncatedError,
  SchemaNotFoundError,
  SchemaUnresolvableError,
  RegistryNotConfiguredError,
} from './registry-avro.ts';
export type { RegistryAvroSerdeOptions, RegistryRetryPolicy } from './registry-avro.ts';
export {
  kafkajsRegistryClient,
  RegistryUnavailableError,
  SchemaIncompatibleError,
  SchemaInvalidError,
  SchemaNotRegisteredError,
  RegistryRejectedError,
} from './registry-client.ts';
export type { SchemaRegistryClient, WriterSchemaLookup, KafkajsRegistryClientOptions } from './registry-client.ts';
