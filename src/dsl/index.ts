export { TopologyBuilder, Stream, GroupedStream, WindowedGroupedStream, SessionWindowedGroupedStream, Table, GlobalTable, isTopologyBuilder } from './builder.ts';
export { tumblingWindow, hoppingWindow, JoinWindows, type WindowOptions } from './windows.ts';
export { SessionWindows, type SessionWindowSpec } from './session-windows.ts';
export { Suppressed, type BufferConfig, type SuppressSpec } from './suppress.ts';
export type { ProcessorContext, ProcessorOptions, ProcessorStore, Punctuation } from './processor.ts';
export { loadTopology, NotATopologyError, TopologyLoadError } from './load.ts';
export { STAGE_KINDS, type StageKind, type Boundary } from './nodes.ts';
export * from './types.ts';
export { RecordHeaders, type RecordContext, type HeadersUpdate, type HeaderValue } from './headers.ts';
