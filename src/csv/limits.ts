/** The size limits of a CSV dataset (docs/api.md, "The CSV"). */

/** Longest line in bytes, its line end excluded; a row's quoted line ends count (1 MiB). */
export const MAX_LINE_BYTES = 1_048_576;

/** Most columns in the header or in any row. */
export const MAX_COLUMNS = 1000;

/** Longest cell (raw bytes) the date and number rules look at; a longer one is neither. */
export const MAX_CHECKED_CELL = 256;
