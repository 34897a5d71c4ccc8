/**
 * The time of each phase of one analysis run, for its `analysis finished` line: `read` (awaiting
 * the stored bytes, wherever it happens), `load` (the settings and the previous delivery's
 * summary from the database), `validate` (the upload checks and the hashing of bytes that were
 * not checked on the way in: a two-step delivery's), `aggregate` (the aggregation), `report` (the
 * comparison with the previous delivery and the report), `save` (the result and the history
 * written to the database).
 */

/** A phase of a run. */
export type Phase = "read" | "load" | "validate" | "aggregate" | "report" | "save";

export class RunPhases {
  /** Time spent awaiting storage: `aggregateDelivery` adds to it (see its `waited`). */
  readonly waited = { ms: 0 };
  /** Time spent checking and hashing: `aggregateDelivery` adds to it (see its `checked`). */
  readonly checked = { ms: 0 };
  /** When the run began (`performance.now()`). */
  readonly started = performance.now();
  readonly ms: Record<Phase, number> = {
    read: 0,
    load: 0,
    validate: 0,
    aggregate: 0,
    report: 0,
    save: 0,
  };
  #phase: Phase = "read";
  #since = this.started;
  /** Time measured inside a phase that counts as a phase of its own. */
  readonly #carried: { counter: { ms: number }; into: Phase; before: number }[] = [
    { counter: this.waited, into: "read", before: 0 },
    { counter: this.checked, into: "validate", before: 0 },
  ];

  /**
   * Ends the current phase (its time awaiting storage counted as `read`, checking and hashing as
   * `validate`) and starts `next`; answers the moment of the change (`performance.now()`).
   */
  enter(next: Phase): number {
    const now = performance.now();
    let own = now - this.#since;
    for (const carried of this.#carried) {
      const ms = carried.counter.ms - carried.before;
      carried.before = carried.counter.ms;
      this.ms[carried.into] += ms;
      own -= ms;
    }
    this.ms[this.#phase] += own;
    this.#since = now;
    this.#phase = next;
    return now;
  }

  /** The log line's fields, whole milliseconds. */
  fields(): Record<`${Phase}_ms`, number> {
    const ms = this.ms;
    return {
      read_ms: Math.round(ms.read),
      load_ms: Math.round(ms.load),
      validate_ms: Math.round(ms.validate),
      aggregate_ms: Math.round(ms.aggregate),
      report_ms: Math.round(ms.report),
      save_ms: Math.round(ms.save),
    };
  }
}
