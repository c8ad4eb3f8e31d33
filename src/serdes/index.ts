export type { Serde, SerdeContext, SerdeEnvironment } from './serde.ts';
export { stringSerde, bytesSerde } from './basic.ts';
export { jsonSerde, JsonInvalidError, ValueRejectedError } from './json.ts';
export type { JsonSerdeOptions, JsonValidator } from './json.ts';
export {
  SerdeError,
  NullValueError,
  ValueInvalidError,
  SerdeNotPreparedError,
  ProtobufSchemaError,
  ProtobufInvalidError,
  JsonSchemaError,
  JsonSchemaViolationError,
} from './errors.ts';
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
export { registryAvroSerde } from './registry-avro.ts';
export type { RegistryAvroSerdeOptions } from './registry-avro.ts';
export { registryProtobufSerde } from './registry-protobuf.ts';
export type { RegistryProtobufSerdeOptions } from './registry-protobuf.ts';
export type { ProtobufSchemaSource } from './protobuf-schema.ts';
export { registryJsonSchemaSerde } from './registry-json-schema.ts';
export type { RegistryJsonSchemaSerdeOptions } from './registry-json-schema.ts';
export type { JsonSchemaSource } from './json-schema.ts';
export {
  WireMagicByteError,
  WireHeaderTruncatedError,
  SchemaNotFoundError,
  SchemaUnresolvableError,
  RegistryNotConfiguredError,
} from './registry-framing.ts';
export type { RegistryRetryPolicy, RegistrySerdeOptions } from './registry-framing.ts';
export {
  kafkajsRegistryClient,
  RegistryUnavailableError,
  SchemaIncompatibleError,
  SchemaInvalidError,
  SchemaNotRegisteredError,
  RegistryRejectedError,
} from './registry-client.ts';
export type {
  SchemaRegistryClient,
  WriterSchemaLookup,
  KafkajsRegistryClientOptions,
  RawSchemaLookup,
  RegistrySchemaType,
} from './registry-client.ts';
