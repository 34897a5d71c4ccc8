/**
 * Rows read from the CSV but not yet added to their users: the cells the user pass needs, in typed
 * arrays that can be handed to a worker (`batchBuffers` lists what to transfer).
 */
export interface RowBatch {
  /** Rows in the batch. */
  size: number;
  /** Row r's id: `idLength[r]` bytes from word `idStart[r]`, zero-padded to a whole word. */
  ids: Int32Array;
  idStart: Int32Array;
  idLength: Int32Array;
  /** Hash of each row's id (see `copyId`). */
  hash: Int32Array;
  /** Index of each row's variant (in order of appearance). */
  variant: Int32Array;
  /** Day number of each row's date (see `readDay`). */
  day: Int32Array;
  /**
   * Per row, written by the tally that adds the batch: the user's record, or -1 for a row it did
   * not count (its user seen in two variants). The reading thread logs the values from it when
   * the worker's tally leaves that to it (see `logBatch`).
   */
  record: Int32Array;
  /** Per row then metric column: the value, or NaN when the cell is empty or not read. */
  values: Float64Array;
  /** Per metric column: 1 while its cells were all numbers when the batch was handed over. */
  candidate: Uint8Array;
  /**
   * Per row then metric column: the cell's value id in the column's `ValueDictionary`, -1 when
   * not kept; empty when the batch's reader does not track dimensions.
   */
  dims: Int32Array;
}

/**
 * An empty batch for `rows` rows of `metrics` metric columns (with their value ids when
 * `dimensions`). A batch's arrays share one buffer, transferred to the worker and back whole.
 */
export function newBatch(rows: number, metrics: number, dimensions: boolean): RowBatch {
  // In 32-bit words: ids, six per-row arrays, the values (two words each), the value ids.
  const words = 14 * rows + 1 + 2 * rows * metrics + (dimensions ? rows * metrics : 0);
  const buffer = new ArrayBuffer(4 * words + metrics);
  let at = 0;
  const next = (length: number) => {
    const view = new Int32Array(buffer, at, length);
    at += 4 * length;
    return view;
  };
  const ids = next(8 * rows);
  const idStart = next(rows);
  const idLength = next(rows);
  const hash = next(rows);
  const variant = next(rows);
  const day = next(rows);
  const record = next(rows);
  at = 8 * Math.ceil(at / 8);
  const values = new Float64Array(buffer, at, rows * metrics);
  at += 8 * rows * metrics;
  const dims = next(dimensions ? rows * metrics : 0);
  return {
    size: 0,
    ids,
    idStart,
    idLength,
    hash,
    variant,
    day,
    record,
    values,
    candidate: new Uint8Array(buffer, at, metrics),
    dims,
  };
}

/** The buffers behind a batch (each once), to transfer with it. */
export function batchBuffers(batch: RowBatch): ArrayBuffer[] {
  return [
    ...new Set([
      batch.ids,
      batch.idStart,
      batch.idLength,
      batch.hash,
      batch.variant,
      batch.day,
      batch.record,
      batch.values,
      batch.candidate,
      batch.dims,
    ].map((array) => array.buffer as ArrayBuffer)),
  ];
}
