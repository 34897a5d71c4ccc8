/**
 * Load, bounded and on 127.0.0.1 only, against the real service in a child process: 20
 * concurrent 20 MB uploads, four of them to the same experiment, with the peak RSS read from
 * /proc; then initiate from 50 concurrent workers for 3 s.
 */
import { loadLine, MB, runLoad } from "./_load.ts";

Deno.test("load: 16 + 4 concurrent 20 MB uploads all answer 201 with bounded memory; initiate holds 50 workers", async () => {
  const report = await runLoad({
    distinct: 16,
    same: 4,
    bytes: 20 * MB,
    workers: 50,
    seconds: 3,
    // Measured 205–301 MB, these bodies read 128 KiB at a time; read 1 MiB at a time, 345–363 MB.
    maxRss: 350 * MB,
  });
  console.log(loadLine("load", report));
});
