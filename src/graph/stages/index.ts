// Every stage kind's compile step, by kind: each family lists its own beside the others of its kind.
import type { StageCompilers } from '../stage-compile.ts';
import { JOIN_STAGES } from './joins.ts';
import { STATEFUL_STAGES } from './stateful.ts';
import { STREAM_STAGES } from './streams.ts';
import { TABLE_STAGES } from './tables.ts';
import { REPARTITION_STAGES } from './repartition.ts';
import { COGROUP_STAGES } from './cogroup.ts';
import { FOREIGN_KEY_JOIN_STAGES } from './foreign-key-joins.ts';

export const STAGE_COMPILERS: StageCompilers = { ...STREAM_STAGES, ...TABLE_STAGES, ...JOIN_STAGES, ...STATEFUL_STAGES, ...REPARTITION_STAGES, ...COGROUP_STAGES, ...FOREIGN_KEY_JOIN_STAGES };
