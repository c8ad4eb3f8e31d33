/**
 * Session windows on event time, as Kafka Streams' `SessionWindows`: a key's records closer than the
 * inactivity gap to each other form one session `[first, last]`; a record that bridges two sessions
 * merges them.
 *
 * A record is late once stream time is more than `grace` past its timestamp, and a session closes once
 * stream time passes `end + gap + grace`. Kafka Streams accepts records up to `gap + grace` behind,
 * which lets a late record reopen a session whose final result was already emitted; here a closed
 * session is final.
 */
export interface SessionWindowSpec {
  readonly type: 'session';
  readonly inactivityGapMs: number;
  readonly graceMs: number;
  /** Emit only the final result of each session, when it closes, instead of every update and merge. */
  readonly emitFinal: boolean;
  readonly lateRecords: 'drop' | 'dead-letter';
}

export class SessionWindows {
  private constructor(readonly spec: SessionWindowSpec) {}

  /** Sessions of records at most `gapMs` apart; no grace. */
  static withInactivityGap(gapMs: number): SessionWindows {
    return new SessionWindows({ type: 'session', inactivityGapMs: gapMs, graceMs: 0, emitFinal: false, lateRecords: 'drop' });
  }

  /** How far behind stream time, in event time, a record may arrive and still be counted. */
  grace(graceMs: number): SessionWindows {
    return new SessionWindows({ ...this.spec, graceMs });
  }

  /** One final result per session when it closes (the same as `suppress(Suppressed.untilWindowCloses())` on the result, without a buffer of its own). */
  emitFinal(): SessionWindows {
    return new SessionWindows({ ...this.spec, emitFinal: true });
  }

  /** Late records are always counted; 'dead-letter' also sends them to the dead-letter topic. */
  lateRecords(handling: 'drop' | 'dead-letter'): SessionWindows {
    return new SessionWindows({ ...this.spec, lateRecords: handling });
  }
}

/** Stream time at which a session `[.., end]` closes: nothing can change it any more. */
export function sessionCloseTime(end: number, spec: SessionWindowSpec): number {
  return end + spec.inactivityGapMs + spec.graceMs + 1;
}
