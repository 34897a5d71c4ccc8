/**
 * The p-quantile of a sample with linear interpolation between order statistics, NumPy's default
 * (`numpy.quantile(values, p)`, method "linear"): with the values sorted as v_0 ≤ … ≤ v_{n−1},
 * h = (n − 1) p and the answer v_⌊h⌋ + (h − ⌊h⌋)(v_⌊h⌋+1 − v_⌊h⌋). Found by selection (Hoare's
 * quickselect, expected linear time) rather than a full sort, as the aggregation calls it on the
 * per-user values of a million users.
 */

/**
 * The p-quantile of `values` (reordered in place). Throws a RangeError for an empty sample or p
 * outside [0, 1].
 */
export function linearQuantile(values: Float64Array, p: number): number {
  const n = values.length;
  if (n === 0) throw new RangeError("Cannot take a quantile of no values");
  if (!(p >= 0 && p <= 1)) throw new RangeError(`Cannot take the quantile p=${p}`);
  const h = (n - 1) * p;
  const low = Math.floor(h);
  select(values, low);
  const below = values[low];
  if (low + 1 >= n || h === low) return below;
  // After selection everything right of `low` is ≥ it: the next order statistic is their minimum.
  let above = values[low + 1];
  for (let i = low + 2; i < n; i++) if (values[i] < above) above = values[i];
  return below + (h - low) * (above - below);
}

/** Reorders `a` so that a[k] is its k-th smallest, smaller ones left of it, larger right. */
function select(a: Float64Array, k: number): void {
  let left = 0;
  let right = a.length - 1;
  while (right > left) {
    // Median of three as the pivot, against sorted or constant runs.
    const mid = (left + right) >>> 1;
    const pivot = median3(a[left], a[mid], a[right]);
    let i = left;
    let j = right;
    while (i <= j) {
      while (a[i] < pivot) i++;
      while (a[j] > pivot) j--;
      if (i <= j) {
        const t = a[i];
        a[i] = a[j];
        a[j] = t;
        i++;
        j--;
      }
    }
    // Now a[left..j] ≤ pivot ≤ a[i..right], and a[j+1..i-1] equal the pivot.
    if (k <= j) right = j;
    else if (k >= i) left = i;
    else return;
  }
}

function median3(a: number, b: number, c: number): number {
  if (a < b) return b < c ? b : a < c ? c : a;
  return a < c ? a : b < c ? c : b;
}
