import { IllegalTransitionError } from './errors.ts';
import type { Transition, TransitionCount } from './worker-events.ts';

/** For each state, the states it may move to. */
export type TransitionTable<S extends string> = { readonly [K in S]: readonly S[] };

export type TransitionHook = (t: Transition) => void;

/**
 * A guarded state: a move the table does not list throws before anything else happens, and every
 * move is counted (by `from->to`) and handed to the hook.
 */
export class StateMachine<S extends string> {
  #state: S;
  readonly #counts = new Map<string, number>();

  constructor(
    readonly name: string,
    initial: S,
    private readonly table: TransitionTable<S>,
    private readonly hook: TransitionHook = () => undefined,
  ) {
    this.#state = initial;
  }

  get state(): S {
    return this.#state;
  }

  is(...states: readonly S[]): boolean {
    return states.includes(this.#state);
  }

  /** Throws unless the current state is one of `allowed`; for calls that do not move the state. */
  require(call: string, allowed: readonly S[]): void {
    if (!allowed.includes(this.#state)) throw new IllegalTransitionError(this.name, this.#state, call);
  }

  to(next: S, call: string): void {
    const from = this.#state;
    if (!this.table[from].includes(next)) throw new IllegalTransitionError(this.name, from, call, next);
    this.#state = next;
    const key = `${from}->${next}`;
    this.#counts.set(key, (this.#counts.get(key) ?? 0) + 1);
    this.hook({ machine: this.name, from, to: next, call });
  }

  /** How often each move happened, keyed `FROM->TO`. */
  counts(): ReadonlyMap<string, number> {
    return this.#counts;
  }

  countRows(): TransitionCount[] {
    return [...this.#counts].map(([move, count]) => {
      const [from = '', to = ''] = move.split('->');
      return { machine: this.name, from, to, count };
    });
  }
}
