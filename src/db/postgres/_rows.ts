/** Conversions between PostgreSQL's column values and the interface's (ISO text, numbers). */

/** A `TIMESTAMPTZ` value as the ISO-8601 text every timestamp of the interface is. */
export function iso(value: Date): string {
  return value.toISOString();
}

/** As `iso`, for a nullable column. */
export function isoOrNull(value: Date | null): string | null {
  return value === null ? null : value.toISOString();
}

/** A `BIGINT` (postgres.js answers text, to keep 64 bits) as a number; sizes fit in 53 bits. */
export function int(value: string | number): number {
  return Number(value);
}

/** As `int`, for a nullable column. */
export function intOrNull(value: string | number | null): number | null {
  return value === null ? null : Number(value);
}
