/**
 * Runs a job every `intervalMs`, never overlapping: the next run is scheduled after the previous
 * one finished. A failing run is logged and counted; the next one runs as usual. A run that
 * answers `NOT_RUN` (another instance held the job's lock while this one needed a run of its
 * own) is neither logged nor counted, and tried again after `retryMs`.
 */
import type { Metrics } from "../metrics.ts";
import type { Logger } from "../log.ts";

/** What a run answers when it could not run now and wants to be tried again soon. */
export const NOT_RUN: unique symbol = Symbol("not run");

export interface PeriodicJobOptions {
  name: string;
  intervalMs: number;
  run: () => Promise<Record<string, unknown> | typeof NOT_RUN | void>;
  metrics: Metrics;
  log: Logger;
  /** Delay before the first run; default intervalMs. */
  firstDelayMs?: number;
  /** Delay after a failed run (or one that answered `NOT_RUN`); default intervalMs. */
  retryMs?: number;
}

export class PeriodicJob {
  #options: PeriodicJobOptions;
  #timer: ReturnType<typeof setTimeout> | undefined;
  #running: Promise<void> | null = null;
  #stopped = false;

  constructor(options: PeriodicJobOptions) {
    this.#options = options;
  }

  start(): void {
    this.#schedule(this.#options.firstDelayMs ?? this.#options.intervalMs);
  }

  #schedule(delay: number): void {
    if (this.#stopped) return;
    this.#timer = setTimeout(() => {
      this.#running = this.runOnce().then((ok) => {
        this.#running = null;
        const { intervalMs, retryMs } = this.#options;
        this.#schedule(ok ? intervalMs : retryMs ?? intervalMs);
      });
    }, delay);
  }

  /**
   * One run now (used by the timer and tests); answers whether it ran and worked. Never throws.
   */
  async runOnce(): Promise<boolean> {
    const { name, metrics } = this.#options;
    const log = this.#options.log;
    const started = performance.now();
    try {
      const result = await this.#options.run();
      if (result === NOT_RUN) return false;
      metrics.timerRuns.inc({ job: name, outcome: "ok" });
      metrics.timerSeconds.observe((performance.now() - started) / 1000, { job: name });
      if (result && Object.keys(result).length > 0) {
        log.info(`timer ${name}`, {
          duration_ms: Math.round(performance.now() - started),
          ...result,
        });
      }
      return true;
    } catch (error) {
      metrics.timerRuns.inc({ job: name, outcome: "failed" });
      log.error(`timer ${name} failed`, {
        error: error instanceof Error ? error.message : String(error),
      });
      return false;
    }
  }

  async stop(): Promise<void> {
    this.#stopped = true;
    clearTimeout(this.#timer);
    if (this.#running) await this.#running;
  }
}
