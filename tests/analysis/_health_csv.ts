/**
 * A file for dimension health whose `country` FR is broken (600 users in A, 400 in B), with the
 * per-value chi-square of SciPy 1.17.1 (`scipy.stats.chisquare([a, b])`, equal expected shares)
 * computed once; LU and MT fall under 1 % of the users and are pooled into `(other)`.
 */

/** Users per (country, variant) and converted users among them; FR is the broken one. */
export const COUNTRIES: Record<string, [number, number, number, number]> = {
  NL: [1000, 1012, 100, 121],
  DE: [800, 790, 80, 79],
  FR: [600, 400, 60, 40],
  BE: [500, 520, 50, 52],
  LU: [10, 12, 1, 1],
  MT: [8, 9, 1, 1],
};

/** SciPy's chisquare on each value's [A, B] (LU and MT pooled into (other): [18, 21]). */
export const SCIPY: Record<string, [number, number]> = {
  NL: [0.07157057654075547, 0.7890635999892657],
  DE: [0.06289308176100629, 0.8019803924450768],
  FR: [40.0, 2.5396285894708634e-10],
  BE: [0.39215686274509803, 0.5311678365460142],
  "(other)": [0.23076923076923078, 0.6309540411841706],
};

/** The file: users in country order, a second row for every fifth user, and a `city` of 60 values. */
export function healthCsv(): string {
  let text = "user_id,variant,date,converted,country,city\n";
  let n = 0;
  for (const [country, [a, b, ca, cb]] of Object.entries(COUNTRIES)) {
    for (const [variant, users, converted] of [["A", a, ca], ["B", b, cb]] as const) {
      for (let i = 0; i < users; i++) {
        const id = `u${n++}`;
        const day = 1 + (n % 9);
        text += `${id},${variant},2026-03-0${day},${i < converted ? 1 : 0},${country},c${n % 60}\n`;
        if (n % 5 === 0) text += `${id},${variant},2026-03-0${day},0,${country},c${n % 60}\n`;
      }
    }
  }
  return text;
}
