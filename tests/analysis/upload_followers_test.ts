/**
 * `AnalysisFollowers`: a file written while it is followed (as the runtime writes a piped upload)
 * gives the same aggregate as the whole file read afterwards, and only when the writer is slow
 * enough, the upload is stored and the settings are still those it was made with.
 */
import { assert, assertEquals } from "../_assert.ts";
import { AnalysisFollowers, runAggregation } from "../../src/analysis/upload_followers.ts";
import { aggregateCsv } from "../../src/analysis/aggregate/aggregate.ts";
import { validateSettings } from "../../src/analysis/settings.ts";
import { SqliteControlPlane } from "../../src/db/sqlite/sqlite_control_plane.ts";
import { createLogger } from "../../src/log.ts";
import type { UploadFollower } from "../../src/ingest/ingest.ts";

const encoder = new TextEncoder();
const TARGET = { orgId: "org-1", experimentId: "exp-1" };
const NO_SETTINGS = runAggregation(validateSettings({}));

/**
 * Rows of `users` users over two variants, several rows each (sums over rows), one user seen in
 * both variants, a dimension column, revenue with decimals: ~2.2 MB, over the one-thread size.
 */
function csv(rows = 60_000, users = 17_000): Uint8Array<ArrayBuffer> {
  const lines = ["user_id,variant,date,country,converted,revenue"];
  for (let i = 0; i < rows; i++) {
    const user = (i * 7919) % users;
    const variant = user === 5 ? (i % 2 ? "B" : "A") : user % 2 ? "B" : "A";
    const day = String(1 + (i % 20)).padStart(2, "0");
    const country = ["DE", "FR", "US"][user % 3];
    lines.push(`u${user},${variant},2026-03-${day},${country},${i % 9 === 0 ? 1 : 0},${i % 7}.5`);
  }
  return encoder.encode(lines.join("\n") + "\n");
}

async function withFollowers(
  fn: (followers: AnalysisFollowers, dir: string, warnings: string[]) => Promise<void>,
  maxBytesPerSecond?: number,
): Promise<void> {
  const dir = await Deno.makeTempDir({ prefix: "abn-follow-" });
  const db = new SqliteControlPlane(`${dir}/abn.sqlite`);
  const warnings: string[] = [];
  const log = createLogger({ sink: (line) => line.includes('"warn"') && warnings.push(line) });
  try {
    await fn(new AnalysisFollowers({ db, log, maxBytesPerSecond }), dir, warnings);
  } finally {
    await db.close();
    await Deno.remove(dir, { recursive: true });
  }
}

/**
 * Writes `bytes` into `path` in `pieces` parts, `gapMs` apart (a slow upload's file), telling
 * `follower` the file's size after each part, as the upload does.
 */
async function writeSlowly(
  path: string,
  bytes: Uint8Array,
  pieces: number,
  gapMs: number,
  follower: UploadFollower,
) {
  const file = await Deno.open(path, { write: true, create: true, truncate: true });
  try {
    const step = Math.ceil(bytes.length / pieces);
    for (let at = 0; at < bytes.length; at += step) {
      const end = Math.min(bytes.length, at + step);
      await file.write(bytes.subarray(at, end));
      follower.grew(end);
      await new Promise((resolve) => setTimeout(resolve, gapMs));
    }
  } finally {
    file.close();
  }
}

/**
 * Starts following an empty file at `path` as an upload of `bytes`, writes them into it slowly
 * (see `writeSlowly`) and answers the follower, not yet told the end.
 */
async function followWriting(
  followers: AnalysisFollowers,
  path: string,
  bytes: Uint8Array,
  pieces: number,
  gapMs: number,
): Promise<UploadFollower> {
  await Deno.writeFile(path, new Uint8Array(0));
  const follower = followers.follow(TARGET, path, bytes.length);
  assert(follower !== null, "followed");
  await writeSlowly(path, bytes, pieces, gapMs, follower);
  return follower;
}

async function aggregateOf(bytes: Uint8Array) {
  return await aggregateCsv(ReadableStream.from([bytes]), {
    ...NO_SETTINGS,
    sizeBytes: bytes.length,
    userSummary: true,
  });
}

Deno.test("a file followed while it is written slowly gives the aggregate of the whole file", async () => {
  const bytes = csv();
  await withFollowers(async (followers, dir, warnings) => {
    const path = `${dir}/spool`;
    await Deno.writeFile(path, new Uint8Array(0));
    const follower = followers.follow(TARGET, path, bytes.length);
    assert(follower !== null);
    // A second upload meanwhile is not followed (one at a time).
    assertEquals(followers.follow({ ...TARGET, experimentId: "exp-2" }, path, 10), null);
    // ~2.2 MB in 40 parts 25 ms apart: about 2 MB/s, under any maximum.
    await writeSlowly(path, bytes, 40, 25, follower);
    follower.end(bytes.length);
    follower.commit("etag-1");
    assertEquals(followers.waiting, 1);
    const followed = await followers.take("org-1", "exp-1", "etag-1", NO_SETTINGS);
    assert(followed !== null, "followed");
    assertEquals(followers.waiting, 0);
    assertEquals(followed, await aggregateOf(bytes));
    // Taken once: a second run reads the stored file.
    assertEquals(await followers.take("org-1", "exp-1", "etag-1", NO_SETTINGS), null);
    assertEquals(warnings, []);
  });
});

Deno.test("a followed upload gives nothing to another ETag, other settings, or when it failed", async () => {
  const bytes = csv(30_000, 9_000);
  await withFollowers(async (followers, dir) => {
    const run = async (finish: (follower: UploadFollower) => void) =>
      finish(await followWriting(followers, `${dir}/spool`, bytes, 20, 20));
    await run((f) => {
      f.end(bytes.length);
      f.commit("etag-a");
    });
    assertEquals(await followers.take("org-1", "exp-1", "etag-b", NO_SETTINGS), null);
    assertEquals(await followers.take("org-1", "exp-2", "etag-a", NO_SETTINGS), null);
    const other = runAggregation(validateSettings({ metric_kinds: { revenue: "conversion" } }));
    assertEquals(await followers.take("org-1", "exp-1", "etag-a", other), null);
    // Refused (a check failed) after its end: dropped even if stored under an ETag later.
    await run((f) => {
      f.end(bytes.length);
      f.abort();
      f.commit("etag-c");
    });
    assertEquals(await followers.take("org-1", "exp-1", "etag-c", NO_SETTINGS), null);
    assertEquals(followers.waiting, 0);
    // Stored, then the request failed (its answer could not be sent): the aggregate is still the
    // stored bytes', and whole.
    await run((f) => {
      f.end(bytes.length);
      f.commit("etag-d");
      f.abort();
    });
    const kept = await followers.take("org-1", "exp-1", "etag-d", NO_SETTINGS);
    assertEquals(kept, await aggregateOf(bytes));
  });
});

Deno.test("a followed file that is not the stored size gives nothing, and says why", async () => {
  const bytes = csv(30_000, 9_000);
  await withFollowers(async (followers, dir, warnings) => {
    const follower = await followWriting(followers, `${dir}/spool`, bytes, 20, 20);
    follower.end(bytes.length + 10);
    follower.commit("etag-short");
    assertEquals(await followers.take("org-1", "exp-1", "etag-short", NO_SETTINGS), null);
    assertEquals(warnings.length, 1);
    assert(warnings[0].includes(`ended at ${bytes.length} of ${bytes.length + 10} bytes`));
  });
});

Deno.test("a file written faster than the maximum is not followed: nothing loaded, nothing read", async () => {
  const bytes = csv(30_000, 9_000);
  // A maximum of 1 byte a second: every writer is fast.
  await withFollowers(async (followers, dir, warnings) => {
    const path = `${dir}/spool`;
    const follower = await followWriting(followers, path, bytes, 10, 40);
    follower.end(bytes.length);
    follower.commit("etag-fast");
    assertEquals(await followers.take("org-1", "exp-1", "etag-fast", NO_SETTINGS), null);
    assertEquals(warnings, []);
    // No longer following: the next upload can be.
    assert(followers.follow(TARGET, path, bytes.length) !== null);
  }, 1);
});
