/**
 * The Python that has the client installed: `ABN_PYTHON`, else `.venv-ci/bin/python` at the
 * repository root (what `.ci/run` makes). Without it the Python suites are skipped with one line
 * naming what to install.
 */

const ROOT = new URL("../../", import.meta.url).pathname;

export const PYTHON_SETUP =
  "run .ci/run or create .venv-ci with pip install ./clients/python -r clients/python/requirements-test.txt";

function exists(path: string): boolean {
  try {
    return Deno.statSync(path).isFile;
  } catch {
    return false;
  }
}

/** The repository root, with a trailing slash. */
export const REPO_ROOT = ROOT;

/** The client's Python, or null when there is none. */
export function clientPython(): string | null {
  const path = Deno.env.get("ABN_PYTHON") || `${ROOT}.venv-ci/bin/python`;
  return exists(path) ? path : null;
}

/** The `abn-upload` console script beside that Python, or null. */
export function abnUpload(): string | null {
  const python = clientPython();
  if (python === null) return null;
  const script = `${python.slice(0, python.lastIndexOf("/") + 1)}abn-upload`;
  return exists(script) ? script : null;
}
