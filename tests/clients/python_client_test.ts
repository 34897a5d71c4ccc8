/**
 * The Python client's own tests (pytest, `clients/python/tests`) as part of `deno task test`:
 * they start this repository's service with this Deno, and this test fails when they fail.
 */
import { assert } from "../_assert.ts";
import { clientPython, PYTHON_SETUP, REPO_ROOT } from "./_python.ts";

const python = clientPython();
if (python === null) console.log(`Python client tests skipped: ${PYTHON_SETUP}`);

Deno.test({
  name: "the Python client's pytest suite passes against the real service",
  ignore: python === null,
  async fn() {
    const env: Record<string, string> = { ABN_DENO: Deno.execPath() };
    const child = new Deno.Command(python!, {
      args: ["-m", "pytest", "clients/python/tests", "-q", "-p", "no:cacheprovider"],
      cwd: REPO_ROOT,
      env,
      stdout: "piped",
      stderr: "piped",
    }).spawn();
    // Bounded: a hung run fails here instead of holding the suite.
    const timer = setTimeout(() => child.kill("SIGKILL"), 10 * 60_000);
    const out = await child.output();
    clearTimeout(timer);
    const d = new TextDecoder();
    const text = `${d.decode(out.stdout)}${d.decode(out.stderr)}`;
    // pytest's closing line ("47 passed in 21.3s"), for the log.
    console.log(text.trim().split("\n").at(-1));
    assert(out.code === 0, `pytest exited ${out.code}:\n${text}`);
  },
});
