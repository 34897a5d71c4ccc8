/**
 * Sample ratio mismatch: Pearson's chi-square goodness-of-fit test of the users per variant against
 * the expected traffic split.
 */

import { chiSquareSurvival } from "./_math.ts";

/** A mismatch is flagged below this p-value. */
export const SRM_P_THRESHOLD = 0.001;
/** Below this many users in any variant the test is not trusted (`enough_data` false). */
export const SRM_MIN_USERS_PER_VARIANT = 8;

/** The `srm` object of the analysis JSON. */
export interface SrmResult {
  chi_square: number;
  /** P(χ²_{k−1} ≥ chi_square); 0 when below the smallest double. */
  p_value: number;
  /** p_value < 0.001 and enough_data. */
  mismatch: boolean;
  /** At least two variants and every variant has at least 8 users. */
  enough_data: boolean;
  /** The split tested against, in the order of `observed`. */
  expected_split: Record<string, number>;
}

/**
 * Tests the users per variant against the expected split (equal shares when omitted) with df = k − 1.
 * The split must name exactly the variants of `observed`; its weights are normalized to sum to 1.
 * With a single variant df is 0: p is 1 and `enough_data` false.
 */
export function srm(
  observed: Record<string, number>,
  expectedSplit?: Record<string, number>,
): SrmResult {
  const names = Object.keys(observed);
  for (const name of names) {
    const count = observed[name];
    if (!Number.isFinite(count) || count < 0) {
      throw new RangeError(`Cannot test the split: variant "${name}" has ${count} users`);
    }
  }
  const split: Record<string, number> = {};
  if (expectedSplit === undefined) {
    for (const name of names) split[name] = 1 / names.length;
  } else {
    const splitNames = Object.keys(expectedSplit);
    const missing = names.filter((name) => !Object.hasOwn(expectedSplit, name));
    const extra = splitNames.filter((name) => !Object.hasOwn(observed, name));
    if (missing.length > 0 || extra.length > 0) {
      throw new RangeError(
        `Cannot test the split: it must name exactly the variants ${names.join(", ")}`,
      );
    }
    for (const name of names) {
      const share = expectedSplit[name];
      if (!(share > 0) || !Number.isFinite(share)) {
        throw new RangeError(`Cannot test the split: variant "${name}" has share ${share}`);
      }
      split[name] = share;
    }
  }

  const total = names.reduce((sum, name) => sum + observed[name], 0);
  const weightSum = names.reduce((sum, name) => sum + split[name], 0);
  let chiSquare = 0;
  if (total > 0) {
    for (const name of names) {
      const expected = total * split[name] / weightSum;
      const difference = observed[name] - expected;
      chiSquare += difference * difference / expected;
    }
  }
  const df = Math.max(names.length - 1, 0);
  const pValue = chiSquareSurvival(chiSquare, df);
  const enoughData = names.length >= 2 &&
    names.every((name) => observed[name] >= SRM_MIN_USERS_PER_VARIANT);
  return {
    chi_square: chiSquare,
    p_value: pValue,
    mismatch: enoughData && pValue < SRM_P_THRESHOLD,
    enough_data: enoughData,
    expected_split: split,
  };
}

/**
 * A p-value for a warning's text: `p = 3.96e-10`, or `p < 5e-324` for one below the smallest
 * double (reported as 0 in the JSON), where three digits of 0 would read "p = 0.00".
 */
export function pValueText(p: number): string {
  return p === 0 ? "p < 5e-324" : `p = ${p.toPrecision(3)}`;
}
