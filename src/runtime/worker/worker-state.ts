import type { TransitionTable } from '../base/state-machine.ts';

/**
 * A worker's lifecycle (Kafka Streams' StreamThread.State was the model):
 *
 *   CREATED ──start()──▶ STARTING ──▶ RUNNING ◀──────▶ REBALANCING
 *      │                    │            │                  │
 *      │ stop()             │ stop()     │ stop()           │ stop()
 *      └────────────────────┴────▶ PENDING_SHUTDOWN ◀───────┘
 *                                        │
 *                                        ▼
 *                                STOPPED | FAILED   (also from STARTING, RUNNING, REBALANCING on an error)
 *
 * PENDING_SHUTDOWN: stop() was asked; the loop finishes and commits its open transaction. STOPPED or
 * FAILED: the loop has ended (cleanly or on an error) and the clients are being closed; `stopped` is
 * emitted once they are. A rebalance callback that comes in then is answered at once, since no
 * transaction is open any more.
 */
export type WorkerState = 'CREATED' | 'STARTING' | 'RUNNING' | 'REBALANCING' | 'PENDING_SHUTDOWN' | 'STOPPED' | 'FAILED';

export const WORKER_TRANSITIONS: TransitionTable<WorkerState> = {
  CREATED: ['STARTING', 'PENDING_SHUTDOWN'],
  STARTING: ['RUNNING', 'PENDING_SHUTDOWN', 'FAILED'],
  RUNNING: ['REBALANCING', 'PENDING_SHUTDOWN', 'FAILED'],
  REBALANCING: ['RUNNING', 'PENDING_SHUTDOWN', 'FAILED'],
  PENDING_SHUTDOWN: ['STOPPED', 'FAILED'],
  STOPPED: [],
  FAILED: [],
};

/** The loop goes on in these; any other state ends it. */
export const LOOPING: readonly WorkerState[] = ['RUNNING', 'REBALANCING'];
