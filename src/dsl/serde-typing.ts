import type { Serde } from '../serdes/serde.ts';
import type { SerdeFor } from './types.ts';

/** The node list keeps serdes with their record types erased: the typed handles are where types are checked. */
export type AnySerde = Serde<unknown>;

/** Accepting `Serde<T | null>` for T is a typing convenience; at run time the serde is the same object. */
export const asSerde = (s: SerdeFor<unknown> | undefined): never => s as never;
