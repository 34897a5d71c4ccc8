import { ApiError } from "./errors.ts";

/** Spec 2.2: 1 to 128 of `A-Z a-z 0-9 . _ -`. */
export const EXPERIMENT_ID_PATTERN = /^[A-Za-z0-9._-]{1,128}$/;

/**
 * Checks an `experiment_id` and answers it. Ids made only of dots (`.`, `..`) are refused too:
 * they would name a folder rather than an experiment on any path-based store.
 */
export function parseExperimentId(value: unknown): string {
  if (typeof value !== "string" || value === "") {
    throw new ApiError("invalid_experiment_id", "experiment_id is required");
  }
  if (value.length > 128) {
    throw new ApiError(
      "invalid_experiment_id",
      `Invalid experiment_id: ${value.length} characters, at most 128 are allowed`,
    );
  }
  if (!EXPERIMENT_ID_PATTERN.test(value) || /^\.+$/.test(value)) {
    throw new ApiError(
      "invalid_experiment_id",
      "Invalid experiment_id: use only A-Z, a-z, 0-9, '.', '_' and '-' (no spaces, '/' or other characters)",
    );
  }
  return value;
}
