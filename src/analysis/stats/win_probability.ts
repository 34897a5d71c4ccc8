/**
 * Bayesian win probability on one metric: each variant's chance to beat the control and chance to
 * be the best. (The lift and its interval are the frequentist comparison's, see `inference.ts`.)
 *
 * - conversion: Beta(1 + conversions, 1 + users − conversions) posteriors (uniform priors);
 *   P(B > A) exactly by Evan Miller's closed-form sum.
 * - numeric: each mean approximately Normal(mean, variance / users), variance the sample variance.
 * - CUPED-adjusted (either kind): the adjusted means and variances, as normals (`adjusted`).
 * - chance to be best: exact for two variants, by numerical integration for three or more
 *   (`integratedBest`, accurate to about 1e-12).
 * - lower is better: "beat" and "best" mean lower.
 *
 * A variant without enough data (conversion: no users; numeric: fewer than two users, so no
 * variance) gets null chances; the chance to be best is shared among the others. Nothing in the
 * output is NaN or infinite.
 */

import { logBeta, normalCdf, normalPdf, regularizedBeta, sampleVariance } from "./_math.ts";

/** Per-variant totals of one metric, over the users with a value. */
export interface VariantTotals {
  name: string;
  users: number;
  /** Sum of per-user values (conversion: the number of converted users). */
  sum: number;
  /** Sum of squared per-user values. */
  sumSquares: number;
}

/** Options of {@linkcode winProbability}. */
export interface WinProbabilityOptions {
  kind: "conversion" | "numeric";
  /** Name of the control variant; must be one of the variants. */
  control: string;
  /** A lower value is the better one: the chances are of being lower. Default false. */
  lowerIsBetter?: boolean;
  /** CUPED-adjusted normals that replace the posteriors above (see {@linkcode AdjustedNormals}). */
  adjusted?: AdjustedNormals;
}

/** A mean and its standard error. */
export interface NormalModel {
  mean: number;
  se: number;
}

/**
 * The CUPED-adjusted means, in the order of the variants (null: too little data). The chance to
 * be best uses `best` (one θ over all variants); each chance to beat the control uses the pair's
 * own adjustment, `versusControl` (null for the control itself).
 */
export interface AdjustedNormals {
  best: (NormalModel | null)[];
  versusControl: ({ control: NormalModel; variant: NormalModel } | null)[];
}

/** One entry of `win_probability.variants` in the analysis JSON. */
export interface VariantWinProbability {
  name: string;
  chance_to_beat_control: number | null;
  chance_to_be_best: number | null;
  /** Relative lift over the control (absent for the control itself; set by the report). */
  lift?: number | null;
  /** The key metric's fixed-horizon interval of the lift (set by the report). */
  lift_ci95?: [number, number] | null;
}

/** Parameters of a beta distribution. */
export interface BetaParameters {
  alpha: number;
  beta: number;
}

/** S = Σ_{i=0}^{αB−1} B(αA+i, βA+βB) / ((βB+i) B(1+i, βB) B(αA, βA)). */
function millerSum(a: BetaParameters, b: BetaParameters): number {
  // Term 0 is B(αA, βA+βB) / B(αA, βA); term i+1 / term i = (αA+i)(βB+i) / ((αA+βA+βB+i)(1+i)).
  // That ratio minus 1 falls linearly in i, so the terms rise then fall: they are summed relative
  // to term 0 and rescaled whenever they grow large.
  let logScale = logBeta(a.alpha, a.beta + b.beta) - logBeta(a.alpha, a.beta);
  let term = 1;
  let sum = 1;
  const total = a.alpha + a.beta + b.beta;
  for (let i = 0; i < b.alpha - 1; i++) {
    term *= (a.alpha + i) * (b.beta + i) / ((total + i) * (1 + i));
    sum += term;
    if (term > 1e200) {
      term *= 1e-200;
      sum *= 1e-200;
      logScale += 200 * Math.LN10;
    }
  }
  return Math.exp(logScale + Math.log(sum));
}

function clampProbability(p: number): number {
  return Math.min(1, Math.max(0, p));
}

/**
 * P(X_B > X_A) for independent X_A ~ Beta(a), X_B ~ Beta(b) with integer parameters, exactly
 * (Evan Miller, "Formulas for Bayesian A/B Testing"). The sum runs over αB terms; by the identities
 * P(B > A) = 1 − P(A > B) and P(B > A) = P(1−A > 1−B) it is taken over whichever of αA, αB, βA, βB
 * is smallest.
 */
export function betaChanceToBeat(a: BetaParameters, b: BetaParameters): number {
  for (const p of [a.alpha, a.beta, b.alpha, b.beta]) {
    if (!Number.isInteger(p) || p < 1) {
      throw new RangeError(
        `Cannot compare beta distributions: parameter ${p} is not an integer ≥ 1`,
      );
    }
  }
  const smallest = Math.min(a.alpha, a.beta, b.alpha, b.beta);
  const flipA = { alpha: a.beta, beta: a.alpha };
  const flipB = { alpha: b.beta, beta: b.alpha };
  let p: number;
  if (smallest === b.alpha) p = millerSum(a, b);
  else if (smallest === a.alpha) p = 1 - millerSum(b, a);
  else if (smallest === a.beta) p = millerSum(flipB, flipA);
  else p = 1 - millerSum(flipA, flipB);
  return clampProbability(p);
}

/** P(X_B > X_A) for independent normals; equal means with no spread count as a tie, 0.5. */
export function normalChanceToBeat(
  a: { mean: number; se: number },
  b: { mean: number; se: number },
): number {
  const spread = Math.sqrt(a.se * a.se + b.se * b.se);
  const difference = b.mean - a.mean;
  if (spread === 0) return difference > 0 ? 1 : difference < 0 ? 0 : 0.5;
  return clampProbability(normalCdf(difference / spread));
}

interface Evaluated {
  index: number;
  mean: number;
  se: number | null;
  beta: BetaParameters | null;
}

function evaluate(totals: VariantTotals, index: number, kind: "conversion" | "numeric"): Evaluated {
  const { users, sum, sumSquares } = totals;
  const mean = users > 0 ? sum / users : NaN;
  if (kind === "conversion") {
    const conversions = Math.min(users, Math.max(0, Math.round(sum)));
    const variance = users >= 2 ? mean * (1 - mean) * users / (users - 1) : null;
    return {
      index,
      mean,
      se: variance === null ? null : Math.sqrt(variance / users),
      beta: users >= 1 ? { alpha: 1 + conversions, beta: 1 + users - conversions } : null,
    };
  }
  const variance = sampleVariance(users, sum, sumSquares);
  return { index, mean, se: variance === null ? null : Math.sqrt(variance / users), beta: null };
}

function fromNormal(model: NormalModel | null, index: number): Evaluated {
  return model === null
    ? { index, mean: NaN, se: null, beta: null }
    : { index, mean: model.mean, se: model.se, beta: null };
}

function isComparable(v: Evaluated): boolean {
  return v.beta !== null || (v.se !== null && Number.isFinite(v.mean));
}

/** P(b > a), or with `lower` P(b < a). */
function chanceToBeat(a: Evaluated, b: Evaluated, lower: boolean): number {
  if (lower) [a, b] = [b, a];
  if (a.beta !== null && b.beta !== null) return betaChanceToBeat(a.beta, b.beta);
  return normalChanceToBeat({ mean: a.mean, se: a.se! }, { mean: b.mean, se: b.se! });
}

/** 8-point Gauss–Legendre nodes on [−1, 1] (the positive half) and their weights. */
const GAUSS_NODES = [
  0.18343464249564978,
  0.525532409916329,
  0.7966664774136267,
  0.9602898564975362,
];
const GAUSS_WEIGHTS = [
  0.36268378337836166,
  0.3137066458778869,
  0.22238103445337443,
  0.10122853629037706,
];

/**
 * Where the panels of the integration end, in standard deviations from a distribution's mean:
 * a quarter apart within 8, wider out to 40 (a Beta with a mean near 0 or 1 has a tail of about
 * e^(−t) at t standard deviations; a normal's is gone by 12).
 */
const PANEL_EDGES = (() => {
  const edges = [10, 12, 16, 20, 24, 32, 40];
  for (let t = 0; t <= 8; t += 0.25) edges.push(t);
  return [...new Set([...edges, ...edges.map((t) => -t)])].sort((a, b) => a - b);
})();

/** A variant's posterior as the integration sees it: "higher is better" (mirrored if need be). */
interface Posterior {
  pdf(x: number): number;
  cdf(x: number): number;
  mean: number;
  sd: number;
  /** The support's ends. */
  low: number;
  high: number;
}

function betaPosterior({ alpha, beta }: BetaParameters): Posterior {
  const logNorm = logBeta(alpha, beta);
  const total = alpha + beta;
  return {
    pdf: (x) => {
      if (x <= 0 || x >= 1) return 0;
      const a = alpha === 1 ? 0 : (alpha - 1) * Math.log(x);
      const b = beta === 1 ? 0 : (beta - 1) * Math.log1p(-x);
      return Math.exp(a + b - logNorm);
    },
    cdf: (x) => x <= 0 ? 0 : x >= 1 ? 1 : regularizedBeta(x, alpha, beta),
    mean: alpha / total,
    sd: Math.sqrt(alpha * beta / (total * total * (total + 1))),
    low: 0,
    high: 1,
  };
}

function normalPosterior(mean: number, se: number): Posterior {
  return {
    pdf: (x) => normalPdf((x - mean) / se) / se,
    cdf: (x) => normalCdf((x - mean) / se),
    mean,
    sd: se,
    low: -Infinity,
    high: Infinity,
  };
}

/**
 * Chance to be best (highest, or with `lower` lowest) of each variant, by integration:
 * P(i best) = ∫ f_i(x) Π_{j≠i} F_j(x) dx, with 8-point Gauss–Legendre panels laid out around
 * every variant's mean in steps of its standard deviation (so that each factor is smooth within
 * a panel, whatever the variants' spreads), all chances from the same nodes. "Lower" mirrors the
 * posteriors (a Beta's α and β swapped, a normal's mean negated). Normals without spread (all
 * users with one value) are point masses: such a variant is best when every other variant falls
 * below its mean, ties between point masses shared; the others then must exceed the highest
 * point mass, which becomes a panel's end.
 */
function integratedBest(variants: Evaluated[], lower: boolean): number[] {
  const k = variants.length;
  const sign = lower ? -1 : 1;
  const points: { index: number; at: number }[] = [];
  const posteriors: { index: number; posterior: Posterior }[] = [];
  variants.forEach((v, index) => {
    if (v.beta !== null) {
      posteriors.push({
        index,
        posterior: betaPosterior(lower ? { alpha: v.beta.beta, beta: v.beta.alpha } : v.beta),
      });
    } else if (v.se! > 0) {
      posteriors.push({ index, posterior: normalPosterior(sign * v.mean, v.se!) });
    } else {
      points.push({ index, at: sign * v.mean });
    }
  });
  const chances = new Array<number>(k).fill(0);
  const floor = points.reduce((top, p) => Math.max(top, p.at), -Infinity);

  // Point masses: the highest ones share, when every spread posterior falls below them.
  const top = points.filter((p) => p.at === floor);
  for (const p of top) {
    let below = 1;
    for (const { posterior } of posteriors) below *= posterior.cdf(p.at);
    chances[p.index] = below / top.length;
  }
  if (posteriors.length === 0) return chances;

  // The spread posteriors: integrated over their supports above the highest point mass.
  const low = Math.max(
    floor,
    Math.min(...posteriors.map(({ posterior: d }) => Math.max(d.low, d.mean - 40 * d.sd))),
  );
  const high = Math.max(
    ...posteriors.map(({ posterior: d }) => Math.min(d.high, d.mean + 40 * d.sd)),
  );
  const edges = [low, high];
  for (const { posterior: d } of posteriors) {
    for (const t of PANEL_EDGES) {
      const x = d.mean + t * d.sd;
      if (x > low && x < high) edges.push(x);
    }
  }
  edges.sort((a, b) => a - b);
  const m = posteriors.length;
  const pdf = new Float64Array(m);
  const cdf = new Float64Array(m);
  const sums = new Float64Array(m);
  for (let e = 1; e < edges.length; e++) {
    const half = (edges[e] - edges[e - 1]) / 2;
    if (!(half > 0)) continue;
    const mid = (edges[e] + edges[e - 1]) / 2;
    for (let n = 0; n < 2 * GAUSS_NODES.length; n++) {
      const node = n < GAUSS_NODES.length ? -GAUSS_NODES[n] : GAUSS_NODES[n - GAUSS_NODES.length];
      const x = mid + half * node;
      const weight = half * GAUSS_WEIGHTS[n % GAUSS_NODES.length];
      for (let j = 0; j < m; j++) {
        pdf[j] = posteriors[j].posterior.pdf(x);
        cdf[j] = posteriors[j].posterior.cdf(x);
      }
      for (let i = 0; i < m; i++) {
        if (pdf[i] === 0) continue;
        let product = weight * pdf[i];
        for (let j = 0; j < m && product !== 0; j++) if (j !== i) product *= cdf[j];
        sums[i] += product;
      }
    }
  }
  posteriors.forEach(({ index }, i) => chances[index] = clampProbability(sums[i]));
  return chances;
}

/**
 * Win probabilities of every variant against `options.control`, in the order given. The control
 * gets `chance_to_beat_control: null` and no lift fields.
 */
export function winProbability(
  variants: VariantTotals[],
  options: WinProbabilityOptions,
): VariantWinProbability[] {
  const { kind, control, adjusted } = options;
  const lower = options.lowerIsBetter ?? false;
  const controlIndex = variants.findIndex((v) => v.name === control);
  if (controlIndex < 0) {
    throw new RangeError(`Cannot compare variants: the control "${control}" is not among them`);
  }
  const evaluated = variants.map((v, i) =>
    adjusted ? fromNormal(adjusted.best[i] ?? null, i) : evaluate(v, i, kind)
  );
  const comparable = evaluated.filter(isComparable);

  const best: (number | null)[] = variants.map(() => null);
  if (comparable.length === 1) {
    best[comparable[0].index] = 1;
  } else if (comparable.length === 2) {
    const [first, second] = comparable;
    const p = chanceToBeat(first, second, lower);
    best[first.index] = 1 - p;
    best[second.index] = p;
  } else if (comparable.length > 2) {
    const chances = integratedBest(comparable, lower);
    comparable.forEach((v, j) => best[v.index] = chances[j]);
  }

  const beat = beatControl(evaluated, controlIndex, lower, adjusted);
  return variants.map((variant, i): VariantWinProbability => ({
    name: variant.name,
    chance_to_beat_control: beat[i],
    chance_to_be_best: best[i],
  }));
}

/** Each variant's chance to beat the control (null for the control and without enough data). */
function beatControl(
  evaluated: Evaluated[],
  controlIndex: number,
  lower: boolean,
  adjusted: AdjustedNormals | undefined,
): (number | null)[] {
  const controlData = evaluated[controlIndex];
  return evaluated.map((variant, i) => {
    if (i === controlIndex) return null;
    let [a, b] = [controlData, variant];
    if (adjusted) {
      const pair = adjusted.versusControl[i] ?? null;
      [a, b] = [
        fromNormal(pair?.control ?? null, controlIndex),
        fromNormal(pair?.variant ?? null, i),
      ];
    }
    return isComparable(a) && isComparable(b) ? chanceToBeat(a, b, lower) : null;
  });
}

/**
 * Only the chances to beat the control of {@linkcode winProbability} (no chance to be best, so
 * integration), in the order given: for the metrics besides the key metric.
 */
export function chancesToBeatControl(
  variants: VariantTotals[],
  options: WinProbabilityOptions,
): (number | null)[] {
  const controlIndex = variants.findIndex((v) => v.name === options.control);
  if (controlIndex < 0) {
    throw new RangeError(
      `Cannot compare variants: the control "${options.control}" is not among them`,
    );
  }
  const adjusted = options.adjusted;
  const evaluated = variants.map((v, i) =>
    adjusted ? fromNormal(adjusted.best[i] ?? null, i) : evaluate(v, i, options.kind)
  );
  return beatControl(evaluated, controlIndex, options.lowerIsBetter ?? false, adjusted);
}
