import type { TransitionTable } from '../base/state-machine.ts';

/**
 * The states of the worker's output producer and the moves between them (KafkaJS's eosManager and
 * Kafka Streams' StreamsProducer were the models). At least once walks the same states; its
 * "transaction" is the batch between two offset commits, and nothing of it is sent to a coordinator.
 *
 *                  connect()          begin()                 commit()
 *   UNINITIALIZED ─────────▶ READY ──────────▶ IN_TRANSACTION ─────────▶ COMMITTING
 *        ▲                   ▲  ▲                    │ abort()     landed  │  │  │
 *        │                   │  └────────────────────┼─────────────────────┘  │  │
 *        │                   │       aborted         ▼             abort()    │  │
 *        │                   └─────────────────── ABORTING ◀──────────────────┘  │
 *        │                                           │ abort failed              │ outcome unknown
 *        │           replace()                       ▼                           │
 *        ├────────────────────────────────── COMMIT_UNKNOWN ◀────────────────────┘
 *        │           replace()
 *        └────────────────────────────────── FENCED ◀── any state but CLOSED
 *
 *   any ──▶ CLOSED
 *
 * COMMIT_UNKNOWN is every failure after which this producer cannot say whether the last transaction
 * landed: the producer is replaced and, once the new one is READY, the worker reads the group's
 * committed offsets back (rule 5 in partition-progress.ts). An abortable failure leaves the state where it was, and abort()
 * follows.
 */
export type TransactionState = 'UNINITIALIZED' | 'READY' | 'IN_TRANSACTION' | 'COMMITTING' | 'ABORTING' | 'COMMIT_UNKNOWN' | 'FENCED' | 'CLOSED';

export const TRANSACTION_TRANSITIONS: TransitionTable<TransactionState> = {
  UNINITIALIZED: ['READY', 'FENCED', 'CLOSED'],
  READY: ['IN_TRANSACTION', 'COMMIT_UNKNOWN', 'FENCED', 'CLOSED'],
  IN_TRANSACTION: ['COMMITTING', 'ABORTING', 'COMMIT_UNKNOWN', 'FENCED', 'CLOSED'],
  COMMITTING: ['READY', 'ABORTING', 'COMMIT_UNKNOWN', 'FENCED', 'CLOSED'],
  ABORTING: ['READY', 'COMMIT_UNKNOWN', 'FENCED', 'CLOSED'],
  COMMIT_UNKNOWN: ['UNINITIALIZED', 'FENCED', 'CLOSED'],
  FENCED: ['UNINITIALIZED', 'CLOSED'],
  CLOSED: [],
};
