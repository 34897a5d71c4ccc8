/**
 * Upload progress on stderr: a bar redrawn in place on a terminal (percent, bytes, rate, ETA),
 * plain lines at every 10 % otherwise (logs, cron mail).
 */

export interface ProgressOptions {
  /** Bytes to send. */
  total: number;
  /** Redraw in place (a terminal) or print lines. */
  terminal: boolean;
  /** Writes text as is (no newline added). */
  write: (text: string) => void;
  /** Milliseconds; default performance.now. */
  now?: () => number;
}

const MIB = 1024 * 1024;
const BAR_WIDTH = 24;

function mib(bytes: number): string {
  return (bytes / MIB).toFixed(1);
}

function duration(seconds: number): string {
  if (!Number.isFinite(seconds)) return "--:--";
  const s = Math.max(0, Math.round(seconds));
  const h = Math.floor(s / 3600);
  const m = Math.floor((s % 3600) / 60);
  const mm = String(m).padStart(h > 0 ? 2 : 1, "0");
  const ss = String(s % 60).padStart(2, "0");
  return h > 0 ? `${h}:${mm}:${ss}` : `${mm}:${ss}`;
}

export class ProgressReporter {
  #options: ProgressOptions;
  #now: () => number;
  #started = 0;
  #lastDraw = -Infinity;
  #nextStep = 10;
  #sent = 0;
  #open = false;

  constructor(options: ProgressOptions) {
    this.#options = options;
    this.#now = options.now ?? (() => performance.now());
  }

  /** Starts (or restarts, on a retry) from zero. */
  start(): void {
    this.#started = this.#now();
    this.#lastDraw = -Infinity;
    this.#nextStep = 10;
    this.#sent = 0;
    this.#open = true;
  }

  update(sent: number): void {
    if (!this.#open) return;
    this.#sent = sent;
    const { total, terminal } = this.#options;
    const percent = total === 0 ? 100 : Math.floor((sent / total) * 100);
    if (terminal) {
      const now = this.#now();
      if (now - this.#lastDraw < 100 && sent < total) return;
      this.#lastDraw = now;
      this.#options.write(`\r\x1b[2K${this.#line(percent, true)}`);
      return;
    }
    if (percent < this.#nextStep) return;
    this.#nextStep = Math.floor(percent / 10) * 10 + 10;
    this.#options.write(`${this.#line(percent, false)}\n`);
  }

  /** Ends the bar's line (the attempt finished, well or not). */
  finish(): void {
    if (!this.#open) return;
    this.#open = false;
    if (this.#options.terminal && this.#lastDraw !== -Infinity) this.#options.write("\n");
  }

  #line(percent: number, bar: boolean): string {
    const { total } = this.#options;
    const seconds = (this.#now() - this.#started) / 1000;
    const rate = seconds > 0 ? this.#sent / seconds : 0;
    const eta = rate > 0 ? (total - this.#sent) / rate : Infinity;
    const stats = `${String(percent).padStart(3)}%  ${mib(this.#sent)}/${mib(total)} MiB  ${
      mib(rate)
    } MiB/s  ETA ${duration(eta)}`;
    if (!bar) return `upload: ${stats}`;
    const filled = Math.min(BAR_WIDTH, Math.floor((percent / 100) * BAR_WIDTH));
    return `[${"#".repeat(filled)}${"-".repeat(BAR_WIDTH - filled)}] ${stats}`;
  }
}
