export { TopologyBuilder, Stream, GroupedStream, WindowedGroupedStream, Table, GlobalTable, isTopologyBuilder } from './builder.ts';
export { tumblingWindow, hoppingWindow, JoinWindows, type WindowOptions } from './windows.ts';
export { loadTopology, NotATopologyError, TopologyLoadError } from './load.ts';
export { STAGE_KINDS, type StageKind, type Boundary } from './nodes.ts';
export * from './types.ts';
