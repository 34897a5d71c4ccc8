/**
 * A small Prometheus registry: counters and histograms with labels, rendered in the text
 * exposition format at `GET /metrics`.
 */

type Labels = Record<string, string>;

const keyCache = new Map<string, string>();

/** The rendered label set `a="1",b="2"` (names sorted), memoized by the raw names and values. */
function labelKey(labels: Labels): string {
  let raw = "";
  for (const name in labels) raw += `${name}\u0000${labels[name]}\u0000`;
  if (raw === "") return "";
  let key = keyCache.get(raw);
  if (key === undefined) {
    const names = Object.keys(labels).sort();
    key = names.map((n) => `${n}="${escapeLabel(labels[n])}"`).join(",");
    if (keyCache.size < 10_000) keyCache.set(raw, key);
  }
  return key;
}

function escapeLabel(value: string): string {
  return value.replace(/\\/g, "\\\\").replace(/\n/g, "\\n").replace(/"/g, '\\"');
}

export class Counter {
  readonly name: string;
  readonly help: string;
  #values = new Map<string, number>();

  constructor(name: string, help: string) {
    this.name = name;
    this.help = help;
  }

  inc(labels: Labels = {}, by = 1): void {
    const key = labelKey(labels);
    this.#values.set(key, (this.#values.get(key) ?? 0) + by);
  }

  get(labels: Labels = {}): number {
    return this.#values.get(labelKey(labels)) ?? 0;
  }

  render(): string {
    const lines = [`# HELP ${this.name} ${this.help}`, `# TYPE ${this.name} counter`];
    if (this.#values.size === 0) lines.push(`${this.name} 0`);
    for (const [key, value] of this.#values) {
      lines.push(`${this.name}${key ? `{${key}}` : ""} ${value}`);
    }
    return lines.join("\n");
  }
}

export class Gauge {
  readonly name: string;
  readonly help: string;
  #read: () => number;

  constructor(name: string, help: string, read: () => number) {
    this.name = name;
    this.help = help;
    this.#read = read;
  }

  render(): string {
    return [
      `# HELP ${this.name} ${this.help}`,
      `# TYPE ${this.name} gauge`,
      `${this.name} ${this.#read()}`,
    ]
      .join("\n");
  }
}

export class Histogram {
  readonly name: string;
  readonly help: string;
  readonly buckets: number[];
  #series = new Map<string, { counts: number[]; sum: number; count: number }>();

  constructor(name: string, help: string, buckets: number[]) {
    this.name = name;
    this.help = help;
    this.buckets = [...buckets].sort((a, b) => a - b);
  }

  observe(value: number, labels: Labels = {}): void {
    const key = labelKey(labels);
    let s = this.#series.get(key);
    if (!s) {
      s = { counts: new Array(this.buckets.length).fill(0), sum: 0, count: 0 };
      this.#series.set(key, s);
    }
    // Counted in the first bucket that holds it; render() adds them up (buckets are cumulative).
    const i = this.buckets.findIndex((le) => value <= le);
    if (i !== -1) s.counts[i]++;
    s.sum += value;
    s.count++;
  }

  count(labels: Labels = {}): number {
    return this.#series.get(labelKey(labels))?.count ?? 0;
  }

  render(): string {
    const lines = [`# HELP ${this.name} ${this.help}`, `# TYPE ${this.name} histogram`];
    for (const [key, s] of this.#series) {
      const sep = key ? "," : "";
      let cumulative = 0;
      this.buckets.forEach((le, i) => {
        cumulative += s.counts[i];
        lines.push(`${this.name}_bucket{${key}${sep}le="${le}"} ${cumulative}`);
      });
      lines.push(`${this.name}_bucket{${key}${sep}le="+Inf"} ${s.count}`);
      lines.push(`${this.name}_sum${key ? `{${key}}` : ""} ${s.sum}`);
      lines.push(`${this.name}_count${key ? `{${key}}` : ""} ${s.count}`);
    }
    return lines.join("\n");
  }
}

const LATENCY_BUCKETS = [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60];

/** Every metric the service exports; later features add theirs here. */
export class Metrics {
  readonly requests = new Counter("abn_http_requests_total", "HTTP requests by route and status");
  readonly requestSeconds = new Histogram(
    "abn_http_request_duration_seconds",
    "HTTP request latency by route",
    LATENCY_BUCKETS,
  );
  readonly bytesReceived = new Counter(
    "abn_upload_bytes_received_total",
    "Dataset bytes received by route",
  );
  readonly uploadsRejected = new Counter(
    "abn_uploads_rejected_total",
    "Rejected dataset deliveries by reason (error code)",
  );
  readonly uploadsStored = new Counter(
    "abn_uploads_stored_total",
    "Datasets stored by route",
  );
  readonly analysisRuns = new Counter("abn_analysis_runs_total", "Analysis runs by outcome");
  readonly analysisSeconds = new Histogram(
    "abn_analysis_duration_seconds",
    "Analysis run duration",
    LATENCY_BUCKETS,
  );
  readonly cleanupDeletions = new Counter(
    "abn_cleanup_deletions_total",
    "Datasets over the size limit deleted by the clean-up",
  );
  readonly timerRuns = new Counter("abn_timer_runs_total", "Timer job runs by job and outcome");
  readonly timerSeconds = new Histogram(
    "abn_timer_run_duration_seconds",
    "Timer job run duration by job",
    [0.001, 0.0025, 0.005, 0.01, ...LATENCY_BUCKETS.slice(2)],
  );
  readonly webhookAttempts = new Counter(
    "abn_webhook_attempts_total",
    "Webhook delivery attempts by result (delivered, retry: 429/503, gone: 410, failed)",
  );
  readonly webhookDeliveries = new Counter(
    "abn_webhook_deliveries_total",
    "Webhook deliveries finished by outcome (delivered, failed: attempts ran out or 410)",
  );
  readonly #extra: { render(): string }[] = [];
  readonly #collectors: (() => Promise<void>)[] = [];

  add(...metrics: { render(): string }[]): void {
    this.#extra.push(...metrics);
  }

  /** Runs `collect` before each rendering (gauges read from the database). */
  addCollector(collect: () => Promise<void>): void {
    this.#collectors.push(collect);
  }

  /** Brings the collected gauges up to date (a failing collector keeps its last value). */
  async collect(): Promise<void> {
    await Promise.all(this.#collectors.map((c) => c().catch(() => {})));
  }

  render(): string {
    return [
      this.requests,
      this.requestSeconds,
      this.bytesReceived,
      this.uploadsRejected,
      this.uploadsStored,
      this.analysisRuns,
      this.analysisSeconds,
      this.cleanupDeletions,
      this.timerRuns,
      this.timerSeconds,
      this.webhookAttempts,
      this.webhookDeliveries,
      ...this.#extra,
    ].map((m) => m.render()).join("\n") + "\n";
  }
}
