/**
 * The bad-input corpus at soak scale: three more seeds, each with ten times the random bodies
 * and mutations of the fast suite, on both storage drivers.
 */
import { assertEquals } from "../tests/_assert.ts";
import { DRIVERS, startDriverServer } from "../tests/_drivers.ts";
import { buildCorpus } from "../tests/reliability/_corpus.ts";
import { reportLine, runCorpus } from "../tests/reliability/_corpus_run.ts";

const SEEDS = [1, 2, 3];
const SCALE = 10;

for (const driver of DRIVERS) {
  Deno.test(`soak: bad-input corpus, seeds ${SEEDS.join(", ")} at scale ${SCALE} (${driver})`, async () => {
    const server = await startDriverServer(driver);
    try {
      for (const seed of SEEDS) {
        // The multi-megabyte cases are the same for every seed: the fast suite sends them.
        const cases = buildCorpus({ seed, scale: SCALE, small: true });
        const report = await runCorpus(server, cases);
        console.log(reportLine(`${driver} seed ${seed}`, report));
        assertEquals(report.failures.slice(0, 25), [], report.failures.slice(0, 25).join("\n"));
      }
      const health = await fetch(`${server.url}/healthz`);
      assertEquals(health.status, 200);
      await health.body?.cancel();
    } finally {
      await server.close();
    }
  });
}
