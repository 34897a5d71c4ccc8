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
 * `dimensions`).
 */
export function newBatch(rows: number, metrics: number, dimensions: boolean): RowBatch {
  return {
    size: 0,
    ids: new Int32Array(8 * rows),
    idStart: new Int32Array(rows),
    idLength: new Int32Array(rows),
    hash: new Int32Array(rows),
    variant: new Int32Array(rows),
    day: new Int32Array(rows),
    values: new Float64Array(rows * metrics),
    candidate: new Uint8Array(metrics),
    dims: new Int32Array(dimensions ? rows * metrics : 0),
  };
}

/** The buffers behind a batch, to transfer with it. */
export function batchBuffers(batch: RowBatch): ArrayBuffer[] {
  return [
    batch.ids,
    batch.idStart,
    batch.idLength,
    batch.hash,
    batch.variant,
    batch.day,
    batch.values,
    batch.candidate,
    batch.dims,
  ].map((array) => array.buffer as ArrayBuffer);
}
