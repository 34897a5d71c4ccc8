/**
 * Webhooks under a burst (`ABN_BENCH_ONLY=webhooks`): 10,000 tiny direct uploads (wrk, 16
 * connections, local storage on tmpfs, SQLite) with one endpoint subscribed to `"*"` at a
 * receiver on 127.0.0.1, against the same burst with no endpoint, in turns (without, with,
 * without, …; `ABN_BENCH_RUNS` turns each, default 5, `sync` before each). Reports the upload
 * rate of each and their ratio, and the time from the last 201 until the receiver had every
 * `dataset.delivered` and `analysis.ready` (20,000 events): the targets are a ratio ≥ 0.90 and
 * ≤ 60 s. Needs `wrk`.
 *
 *   deno run -A bench/webhooks_bench.ts [RUNS]
 */
import { benchKey, median, printTable } from "./_util.ts";
import { burst, serve } from "./scale_bench.ts";

const UPLOADS = 10_000;

interface Receiver {
  url: string;
  /** Distinct `webhook-id`s received per event type, and when the last new one arrived. */
  seen(type: string): number;
  lastAt: number;
  close(): Promise<void>;
}

function startReceiver(): Receiver {
  const ids = new Map<string, Set<string>>();
  const receiver = {
    url: "",
    lastAt: 0,
    seen: (type: string) => ids.get(type)?.size ?? 0,
    close: () => server.shutdown(),
  };
  const server = Deno.serve({ hostname: "127.0.0.1", port: 0, onListen() {} }, async (req) => {
    const { type } = JSON.parse(await req.text());
    const set = ids.get(type) ?? new Set();
    ids.set(type, set);
    const id = req.headers.get("webhook-id")!;
    if (!set.has(id)) {
      set.add(id);
      receiver.lastAt = performance.now();
    }
    return new Response(null, { status: 204 });
  });
  receiver.url = `http://127.0.0.1:${server.addr.port}/hook`;
  return receiver;
}

export interface WebhookRun {
  withWebhooks: boolean;
  rps: number;
  p99ms: number;
  /** From the last 201 until all 20,000 events arrived (with webhooks), seconds. */
  deliveredAfterS: number | null;
}

async function sync(): Promise<void> {
  await new Deno.Command("sync").output().catch(() => {});
}

/** One burst on a fresh service, with or without an endpoint. */
export async function webhookRun(withWebhooks: boolean): Promise<WebhookRun> {
  const tmpfs = (await Deno.stat("/dev/shm").catch(() => null))?.isDirectory
    ? "/dev/shm"
    : undefined;
  const dir = await Deno.makeTempDir({ dir: tmpfs, prefix: "abn-bench-webhooks-" });
  const receiver = startReceiver();
  try {
    const env = { ABN_DATA_DIR: dir, ABN_WEBHOOK_ALLOW_PRIVATE: "true" };
    const { apiKey } = await benchKey(env);
    const svc = await serve(env, apiKey);
    try {
      if (withWebhooks) {
        const res = await fetch(`${svc.url}/api/v1/webhooks/`, {
          method: "POST",
          headers: { authorization: `Bearer ${apiKey}`, "content-type": "application/json" },
          body: JSON.stringify({ url: receiver.url, events: ["*"] }),
        });
        if (res.status !== 201) throw new Error(`endpoint not created: ${await res.text()}`);
        await res.body?.cancel();
      }
      await sync();
      const b = await burst(svc, UPLOADS, "w");
      const lastCreated = performance.now() - b.analysedAfterS * 1000;
      let deliveredAfterS: number | null = null;
      if (withWebhooks) {
        const all = () =>
          receiver.seen("dataset.delivered") >= UPLOADS &&
          receiver.seen("analysis.ready") >= UPLOADS;
        while (!all() && performance.now() - lastCreated < 180_000) {
          await new Promise((r) => setTimeout(r, 20));
        }
        deliveredAfterS = all() ? (receiver.lastAt - lastCreated) / 1000 : Infinity;
      }
      return { withWebhooks, rps: b.rps, p99ms: b.p99ms, deliveredAfterS };
    } finally {
      await svc.stop();
    }
  } finally {
    await receiver.close();
    await Deno.remove(dir, { recursive: true });
  }
}

/** Runs `runs` turns of each, alternating, and answers the table's rows. */
export async function benchWebhooks(runs = 5): Promise<Record<string, string>[]> {
  const results: WebhookRun[] = [];
  for (let i = 0; i < runs; i++) {
    for (const withWebhooks of [false, true]) {
      const r = await webhookRun(withWebhooks);
      console.log(
        `  ${withWebhooks ? "with" : "without"} webhooks: ${r.rps.toFixed(0)} uploads/s` +
          (r.deliveredAfterS === null ? "" : `, events in ${r.deliveredAfterS.toFixed(1)} s`),
      );
      results.push(r);
    }
  }
  const rate = (w: boolean) => results.filter((r) => r.withWebhooks === w).map((r) => r.rps);
  const ratios = results.filter((r) => r.withWebhooks).map((r, i) => r.rps / rate(false)[i]);
  const after = results.flatMap((r) => r.deliveredAfterS ?? []);
  const range = (xs: number[], digits: number) =>
    `${Math.min(...xs).toFixed(digits)}–${Math.max(...xs).toFixed(digits)}`;
  return [
    {
      benchmark: `tiny uploads, one "*" webhook endpoint, ${UPLOADS}, ${runs} turns each`,
      ours: `${median(rate(true)).toFixed(0)} uploads/s`,
      baseline: `no endpoint ${median(rate(false)).toFixed(0)} uploads/s`,
      ratio: `${median(ratios).toFixed(2)} (turns ${range(ratios, 2)})`,
      target: "≥ 0.90",
    },
    {
      benchmark: `… all ${2 * UPLOADS} events at the receiver after the last 201`,
      ours: `median ${median(after).toFixed(1)} s (${range(after, 1)} s)`,
      baseline: "—",
      ratio: "—",
      target: "≤ 60 s",
    },
  ];
}

if (import.meta.main) {
  printTable("Webhooks under a burst", await benchWebhooks(Number(Deno.args[0] ?? 5)));
}
