// stream.repartition(): the records arrive from the repartition topic's source; the stage itself
// only marks where the new sub-topology starts.
import type { NodeFactories } from './node-factory.ts';
import { PassThroughNode } from './stateless.ts';

export const REPARTITION_NODES = {
  repartition: ({ task, node }) => new PassThroughNode(task, node),
} satisfies NodeFactories;
