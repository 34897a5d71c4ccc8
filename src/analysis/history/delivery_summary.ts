/**
 * What the service keeps of a delivery to tell, at the next one, what changed (docs/api.md,
 * "Changes since the previous delivery"): every user as a 64-bit hash of their id with their variant (sorted
 * by hash, see `aggregate/_user_hashes.ts`), the rows per date and the rows in all. Stored per
 * experiment as one compact blob (about 9 bytes a user: 1.4 M users make some 13 MB) and compared
 * with the next delivery's by one merge of the two sorted lists.
 *
 * The blob, little-endian: "ABNU", format version (u32), users n (u32), header length L (u32), a
 * JSON header of L bytes `{rows, variants, dates, width}` padded to 4 bytes, then n hash high
 * words (u32), n low words (u32), and n variant positions in `width` bytes each (the largest value
 * of that width: a user seen in two variants). A blob of another format is no summary at all (the
 * next delivery then reports no changes rather than wrong ones).
 */
import type { Aggregate, UserHashes } from "../aggregate/aggregate_types.ts";
import { noPosition, positionsIn, positionWidth } from "../aggregate/_user_hashes.ts";
import type { DeliverySummaryRepo, DeliverySummaryRow } from "../../db/control_plane.ts";

/** A delivery as the next one is compared with it. */
export interface DeliverySummary {
  rows: number;
  /** The variant names, in the order `users.variant` positions refer to. */
  variants: string[];
  /** Rows per date (`YYYY-MM-DD`). */
  dates: Record<string, number>;
  users: UserHashes;
}

/** The `changes` object of the analysis JSON (docs/api.md, "Changes since the previous delivery"). */
export interface Changes {
  previous_etag: string;
  previous_delivered_at: string;
  rows_added: number;
  users_added: number;
  users_switched_variant: number;
  users_vanished: number;
  restated_dates: string[];
  provisional_date: string | null;
}

const MAGIC = 0x554e4241; // "ABNU" read as a little-endian u32
const FORMAT = 1;

if (new Uint8Array(new Uint32Array([1]).buffer)[0] !== 1) {
  throw new Error("delivery summaries are stored little-endian: this machine is big-endian");
}

/** The summary of an aggregate made with the `userSummary` option. */
export function deliverySummaryOf(aggregate: Aggregate): DeliverySummary {
  if (!aggregate.userSummary) {
    throw new TypeError("Cannot summarize the delivery: aggregate it with userSummary: true");
  }
  return {
    rows: aggregate.rows,
    variants: aggregate.variants,
    dates: Object.fromEntries(aggregate.daily.map((day) => [day.date, day.rows ?? 0])),
    users: aggregate.userSummary,
  };
}

/**
 * The blob of a summary. When the users' hashes lie in one buffer as `userHashes` leaves those of
 * a large delivery (hi, lo and the positions in a row, with room before them for the head), the
 * blob is written around them in that buffer: it shares their memory (no copy of their size at
 * the run's peak), and the summary stays readable. Otherwise it is a new buffer.
 */
export function encodeDeliverySummary(summary: DeliverySummary): Uint8Array {
  const { hi, lo, variant, none } = summary.users;
  const n = hi.length;
  const width = positionWidth(summary.variants.length);
  const header = new TextEncoder().encode(JSON.stringify({
    rows: summary.rows,
    variants: summary.variants,
    dates: summary.dates,
    width,
  }));
  const body = 16 + ((header.length + 3) & ~3);
  const size = body + 8 * n + width * n;
  const inPlace = n > 0 && hi.byteOffset >= body && lo.buffer === hi.buffer &&
    variant.buffer === hi.buffer && lo.byteOffset === hi.byteOffset + 4 * n &&
    variant.byteOffset === hi.byteOffset + 8 * n && variant.BYTES_PER_ELEMENT === width &&
    none === noPosition(width);
  const blob = inPlace
    ? new Uint8Array(hi.buffer, hi.byteOffset - body, size)
    : new Uint8Array(size);
  // Offsets in the blob's buffer (a multiple of 4 apart: `body` and the hashes' place are).
  const start = blob.byteOffset;
  new Uint32Array(blob.buffer, start, 4).set([MAGIC, FORMAT, n, header.length]);
  blob.set(header, 16);
  blob.fill(0, 16 + header.length, body);
  if (!inPlace) {
    new Uint32Array(blob.buffer, start + body, n).set(hi);
    new Uint32Array(blob.buffer, start + body + 4 * n, n).set(lo);
    const out = positionsIn(blob.buffer, start + body + 8 * n, n, width);
    const stored = noPosition(width);
    for (let i = 0; i < n; i++) {
      const v = variant[i];
      out[i] = v === none ? stored : v;
    }
  }
  return blob;
}

/** The dates of the summary in `blob`, from its header alone (none when it is not one). */
export function summaryDates(blob: Uint8Array): string[] {
  const head = summaryHead(blob);
  if (head === null) return [];
  const length = head.getUint32(12, true);
  if (16 + length > blob.length) return [];
  const header = JSON.parse(new TextDecoder().decode(blob.subarray(16, 16 + length)));
  return Object.keys(header.dates ?? {});
}

/** How many users the summary in `blob` holds (0 when it is not one of this format), unread. */
export function summaryUserCount(blob: Uint8Array): number {
  return summaryHead(blob)?.getUint32(8, true) ?? 0;
}

/** Bytes of a summary's blob read at first for its header (the rest when the header is longer). */
const HEAD_BYTES = 64 * 1024;

/**
 * The experiment's summary row with only the head of its blob (the 16 bytes and the JSON header
 * that `summaryUserCount` and `summaryDates` read), or null when there is none: what a run needs
 * before it aggregates, without reading (and allocating) some 9 bytes per user.
 */
export async function readSummaryHead(
  repo: DeliverySummaryRepo,
  orgId: string,
  experimentId: string,
): Promise<DeliverySummaryRow | null> {
  const row = await repo.head(orgId, experimentId, HEAD_BYTES);
  const head = row === null ? null : summaryHead(row.summary);
  const needed = head === null ? 0 : 16 + head.getUint32(12, true);
  if (row === null || needed <= row.summary.length) return row;
  // A header longer than the first read (dates over some years): read as far as its end.
  return await repo.head(orgId, experimentId, needed);
}

/** The 16-byte head of the summary in `blob`, or null when it is not one of this format. */
function summaryHead(blob: Uint8Array): DataView | null {
  if (blob.length < 16) return null;
  const head = new DataView(blob.buffer, blob.byteOffset, 16);
  const [magic, format] = [head.getUint32(0, true), head.getUint32(4, true)];
  return magic === MAGIC && format === FORMAT ? head : null;
}

/**
 * The summary in `blob`, or null when it is not one of this format: views of `blob`'s buffer when
 * it starts at a multiple of 4 bytes (as the repositories' blobs do), else of an aligned copy.
 * The variant positions are read as stored (`width` bytes each).
 */
export function decodeDeliverySummary(blob: Uint8Array): DeliverySummary | null {
  if (summaryHead(blob) === null) return null;
  const bytes = blob.byteOffset % 4 === 0 ? blob : blob.slice();
  const [, , n, length] = new Uint32Array(bytes.buffer, bytes.byteOffset, 4);
  const body = 16 + ((length + 3) & ~3);
  let header;
  try {
    header = JSON.parse(new TextDecoder().decode(bytes.subarray(16, 16 + length)));
  } catch {
    return null;
  }
  const width: number = header.width;
  if ((width !== 1 && width !== 2 && width !== 4) || bytes.length !== body + (8 + width) * n) {
    return null;
  }
  // Offsets in `bytes.buffer`.
  const hiAt = bytes.byteOffset + body;
  return {
    rows: header.rows,
    variants: header.variants,
    dates: header.dates,
    users: {
      hi: new Uint32Array(bytes.buffer, hiAt, n),
      lo: new Uint32Array(bytes.buffer, hiAt + 4 * n, n),
      variant: positionsIn(bytes.buffer, hiAt + 8 * n, n, width),
      none: noPosition(width),
    },
  };
}

/**
 * What changed from `previous` (the delivery with that ETag) to `current`: rows added (negative
 * when the file shrank), users not in the previous delivery, users in both whose variant differs
 * (a user seen in two variants in one of them and not the other counts), users gone, and the
 * dates before the previous delivery's last date whose row count differs (that last date itself
 * is expected to grow). `provisional_date` is left null here (the report judges it).
 */
export function compareDeliveries(
  previous: DeliverySummary,
  current: DeliverySummary,
  previousEtag: string,
  previousDeliveredAt: string,
): Changes {
  const a = previous.users;
  const b = current.users;
  const nameA = (i: number) => {
    const v = a.variant[i];
    return v === a.none ? null : previous.variants[v];
  };
  const nameB = (j: number) => {
    const v = b.variant[j];
    return v === b.none ? null : current.variants[v];
  };
  let i = 0;
  let j = 0;
  let added = 0;
  let vanished = 0;
  let switched = 0;
  // One merge of the two sorted lists.
  while (i < a.hi.length && j < b.hi.length) {
    const order = a.hi[i] - b.hi[j] || a.lo[i] - b.lo[j];
    if (order === 0) {
      if (nameA(i) !== nameB(j)) switched++;
      i++;
      j++;
    } else if (order < 0) {
      vanished++;
      i++;
    } else {
      added++;
      j++;
    }
  }
  vanished += a.hi.length - i;
  added += b.hi.length - j;
  const previousDates = Object.keys(previous.dates).sort();
  const last = previousDates[previousDates.length - 1] ?? "";
  const dates = [...new Set([...previousDates, ...Object.keys(current.dates)])].sort();
  const restated = dates.filter((date) =>
    date < last && (previous.dates[date] ?? 0) !== (current.dates[date] ?? 0)
  );
  return {
    previous_etag: previousEtag,
    previous_delivered_at: previousDeliveredAt,
    rows_added: current.rows - previous.rows,
    users_added: added,
    users_switched_variant: switched,
    users_vanished: vanished,
    restated_dates: restated,
    provisional_date: null,
  };
}

/**
 * `compareDeliveries` with the previous delivery's summary still in its `blob`, read where it lies
 * (`decodeDeliverySummary`); null when the blob is no summary.
 */
export function compareWithStored(
  blob: Uint8Array,
  current: DeliverySummary,
  previousEtag: string,
  previousDeliveredAt: string,
): Changes | null {
  const previous = decodeDeliverySummary(blob);
  if (previous === null) return null;
  return compareDeliveries(previous, current, previousEtag, previousDeliveredAt);
}
