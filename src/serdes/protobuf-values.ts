import protobuf from 'protobufjs';

/**
 * Where a value does not fit a message, before protobufjs's fromObject sees it: fromObject
 * coerces silently ("abc" for an int32 becomes 0, an unknown field vanishes), which would
 * write a record other than the one the topology meant. Accepts what deserialize gives back
 * (int64 as bigint or decimal string, enums by name) and the numbers and strings that the
 * proto3 JSON mapping allows.
 */
export function protobufValueProblems(type: protobuf.Type, value: unknown): string[] {
  const problems: string[] = [];
  checkMessage(type, value, '', problems);
  return problems;
}

const INT32 = new Set(['int32', 'sint32', 'sfixed32', 'uint32', 'fixed32']);
const INT64 = new Set(['int64', 'sint64', 'sfixed64', 'uint64', 'fixed64']);
const INTEGER_TEXT = /^-?\d+$/;

function checkMessage(type: protobuf.Type, value: unknown, path: string, problems: string[]): void {
  if (typeof value !== 'object' || value === null || Array.isArray(value) || Buffer.isBuffer(value)) {
    problems.push(`${path || '(root)'}: ${type.name} object expected`);
    return;
  }
  for (const [key, fieldValue] of Object.entries(value)) {
    const field = type.fields[key];
    const at = path ? `${path}.${key}` : key;
    if (field === undefined) {
      problems.push(`${at}: ${type.name} has no such field`);
      continue;
    }
    // Absent and null both mean "not set", as fromObject and toObject treat them.
    if (fieldValue === null || fieldValue === undefined) continue;
    field.resolve();
    if (field instanceof protobuf.MapField) {
      if (typeof fieldValue !== 'object' || Array.isArray(fieldValue)) problems.push(`${at}: map object expected`);
      else for (const [k, v] of Object.entries(fieldValue)) checkSingle(field, v, `${at}.${k}`, problems);
    } else if (field.repeated) {
      if (!Array.isArray(fieldValue)) problems.push(`${at}: array expected`);
      else fieldValue.forEach((v: unknown, i) => checkSingle(field, v, `${at}[${i}]`, problems));
    } else {
      checkSingle(field, fieldValue, at, problems);
    }
  }
}

function checkSingle(field: protobuf.Field, value: unknown, at: string, problems: string[]): void {
  const resolved = field.resolvedType;
  if (resolved instanceof protobuf.Type) return checkMessage(resolved, value, at, problems);
  if (resolved instanceof protobuf.Enum) {
    const known = typeof value === 'string' ? value in resolved.values : typeof value === 'number' && Number.isInteger(value);
    if (!known) problems.push(`${at}: a value of enum ${resolved.name} expected`);
    return;
  }
  if (!scalarFits(field.type, value)) problems.push(`${at}: ${field.type} expected`);
}

function scalarFits(kind: string, value: unknown): boolean {
  if (INT32.has(kind)) return typeof value === 'number' && Number.isInteger(value);
  if (INT64.has(kind)) {
    return typeof value === 'bigint' || (typeof value === 'number' && Number.isSafeInteger(value)) || (typeof value === 'string' && INTEGER_TEXT.test(value));
  }
  switch (kind) {
    case 'double':
    case 'float':
      return typeof value === 'number';
    case 'bool':
      return typeof value === 'boolean';
    case 'string':
      return typeof value === 'string';
    case 'bytes':
      return value instanceof Uint8Array || typeof value === 'string';
    default:
      return false;
  }
}
