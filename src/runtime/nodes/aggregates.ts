// The aggregate stage kind builds one of four nodes, by the store it was compiled with: a session
// store, a sliding or another windowed store, or a key-value store (the only one whose results a
// record cache holds back).
import type { NodeFactories } from './node-factory.ts';
import { SessionAggregateNode } from './sessions.ts';
import { SlidingWindowAggregateNode } from './sliding-windows.ts';
import { AggregateNode, WindowedAggregateNode } from './stateful.ts';

export const AGGREGATE_NODES = {
  aggregate: ({ task, node, storeOf }) => {
    const s = storeOf(node.stores[0]!);
    if (s.spec.session) {
      const n = new SessionAggregateNode(task, node, s.store, s.spec);
      task.timeListeners.push(n);
      return n;
    }
    if (s.spec.window?.type === 'sliding') {
      const n = new SlidingWindowAggregateNode(task, node, s.store, s.spec);
      task.timeListeners.push(n);
      return n;
    }
    if (s.spec.window) {
      const n = new WindowedAggregateNode(task, node, s.store, s.spec);
      task.timeListeners.push(n);
      return n;
    }
    const n = new AggregateNode(task, node, s.store, s.spec);
    if (n.cache) task.caching.push(n);
    return n;
  },
} satisfies NodeFactories;
