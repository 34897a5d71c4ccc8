/**
 * The generated corpus of malformed uploads, through the real server on each storage driver:
 * every answer is 201 or a 4xx JSON error with a known code (never a 5xx, never a crash), a
 * refused upload leaves the stored file byte-identical, the verdict matches the validator's
 * in-process verdict, and how the body is cut into chunks never changes the verdict.
 */
import { assert, assertApiError, assertEquals } from "../_assert.ts";
import { DRIVERS, startDriverServer } from "../_drivers.ts";
import { buildCorpus } from "./_corpus.ts";
import { CORPUS_SEED, reportLine, runCorpus } from "./_corpus_run.ts";
import { tmpFiles, waitFor } from "../_faults.ts";
import { upload } from "./_helpers.ts";

const CASES = buildCorpus({ seed: CORPUS_SEED });

Deno.test("the bad-input corpus has at least 300 generated cases in every category", () => {
  assert(CASES.length >= 300, `${CASES.length} cases`);
  const categories = new Set(CASES.map((c) => c.category));
  for (
    const category of [
      "signature",
      "utf-8",
      "nul / utf-16 / utf-32",
      "limits",
      "structure",
      "dates",
      "numbers",
      "random bytes",
      "mutations",
    ]
  ) {
    assert(categories.has(category), category);
  }
  // The same seed gives the same bytes.
  const again = buildCorpus({ seed: CORPUS_SEED });
  assertEquals(again.map((c) => c.bytes.length), CASES.map((c) => c.bytes.length));
});

// Both drivers at once: the S3 run mostly waits on s3rver, so the pair takes little more than one.
Deno.test(`bad input: ${CASES.length} malformed uploads per driver answer 201 or a known 4xx and never change the stored file (local and s3)`, async () => {
  const servers = await Promise.all(DRIVERS.map((driver) => startDriverServer(driver)));
  try {
    const reports = await Promise.all(servers.map((server) => runCorpus(server, CASES)));
    for (const [i, report] of reports.entries()) {
      console.log(reportLine(servers[i].driver, report));
    }
    for (const [i, report] of reports.entries()) {
      assertEquals(
        report.failures.slice(0, 25),
        [],
        `${servers[i].driver}:\n${report.failures.slice(0, 25).join("\n")}`,
      );
      // The server is still healthy.
      const health = await fetch(`${servers[i].url}/healthz`);
      assertEquals(health.status, 200);
      await health.body?.cancel();
    }
  } finally {
    await Promise.all(servers.map((server) => server.close()));
  }
});

Deno.test({
  name: "invalid uploads with a declared length over 8 MiB answer 400 and leave no temporary file",
  async fn() {
    const server = await startDriverServer("local");
    try {
      const big = CASES.filter((c) => c.category === "limits" && c.bytes.length > 8 << 20);
      assert(big.length >= 3, `${big.length} cases`);
      for (let round = 0; round < 3; round++) {
        for (const c of big) {
          const res = await upload(server, "declared", c.bytes);
          await assertApiError(res, 400, "invalid_csv");
          await waitFor(
            async () => (await tmpFiles(server.dataDir)).length === 0,
            `no temporaries after ${c.name}`,
            5_000,
          );
        }
      }
    } finally {
      await server.close();
    }
  },
});
