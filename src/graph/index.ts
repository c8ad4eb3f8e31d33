export { compile } from './compile.ts';
export { CompiledTopology } from './compiled.ts';
export * from './errors.ts';
export type * from './types.ts';
