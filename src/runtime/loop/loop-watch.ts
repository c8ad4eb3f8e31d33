/**
 * Names the step the worker loop is in and reports one that lasts too long. Every Kafka call of the
 * loop carries its own timeout, so a step that runs for minutes means an await that nothing ends, and a
 * worker stuck that way still looks alive (its consumer heartbeats from librdkafka's thread) until
 * max.poll.interval.ms expels it from the group. The report names the step, so the next such stall says
 * where it is. The timer is unref'd: it never keeps a process alive.
 */
export interface LoopStall {
  readonly step: string;
  readonly forMs: number;
}

export class LoopWatch {
  private step = 'starting';
  private since = Date.now();
  private reported = false;
  private timer: NodeJS.Timeout | undefined;

  constructor(
    private readonly thresholdMs: number,
    private readonly onStall: (stall: LoopStall) => void,
  ) {}

  /** The loop now does `step`; cheap enough for every step of every iteration. */
  enter(step: string): void {
    this.step = step;
    this.since = Date.now();
    this.reported = false;
  }

  start(checkEveryMs = Math.min(5_000, this.thresholdMs)): void {
    this.timer ??= setInterval(() => this.check(), checkEveryMs).unref();
  }

  stop(): void {
    clearInterval(this.timer);
    this.timer = undefined;
  }

  /** Reports the current step once when it has run past the threshold; again only after the loop moved on. */
  check(now = Date.now()): LoopStall | undefined {
    const forMs = now - this.since;
    if (this.reported || forMs < this.thresholdMs) return undefined;
    this.reported = true;
    const stall = { step: this.step, forMs };
    this.onStall(stall);
    return stall;
  }
}
