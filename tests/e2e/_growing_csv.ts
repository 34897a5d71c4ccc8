/**
 * A nightly delivery of a growing experiment: users enter steadily, 2 × `perDay` a date (A and B),
 * each with a row on their first date and one on the next; each delivery adds a date. Options
 * restate a past date (extra rows on 2026-03-03), move one user to the other variant, and cut the
 * newest date short (a fifth of its new users: an incomplete export).
 */
import { mulberry32 } from "../../bench/generate_csv.ts";

export interface GrowingOptions {
  /** Dates 2026-03-01 onwards. */
  days: number;
  /** New users per date and variant; default 60. */
  perDay?: number;
  /** Four more rows on 2026-03-03. */
  restated?: boolean;
  /** User `d2u7` (B) delivered in A. */
  switched?: boolean;
  /** The newest date has a fifth of its new users. */
  incompleteLast?: boolean;
}

export const SWITCHED_USER = "d2u7";

export function dateOf(day: number): string {
  return `2026-03-${String(day).padStart(2, "0")}`;
}

export function growingCsv(options: GrowingOptions): string {
  const perDay = options.perDay ?? 60;
  const rows: string[] = ["user_id,variant,date,converted,revenue,device"];
  for (let d = 1; d <= options.days; d++) {
    const entering = d === options.days && options.incompleteLast ? perDay / 5 : perDay;
    for (let j = 0; j < 2 * entering; j++) {
      const id = `d${d}u${j}`;
      let variant = j % 2 === 0 ? "A" : "B";
      if (options.switched && id === SWITCHED_USER) variant = "A";
      const device = ["mobile", "desktop", "tablet"][j % 3];
      for (const day of [d, d + 1]) {
        if (day > options.days) continue;
        // The same draw for the same row in every delivery.
        const rand = mulberry32(d * 100_000 + j * 10 + day - d);
        const converted = rand() < (variant === "A" ? 0.1 : 0.13) ? 1 : 0;
        const revenue = converted ? (10 + Math.floor(rand() * 9000) / 100).toFixed(2) : "0";
        rows.push(`${id},${variant},${dateOf(day)},${converted},${revenue},${device}`);
      }
    }
  }
  if (options.restated) {
    for (let j = 0; j < 4; j++) rows.push(`d3u${j},${j % 2 ? "B" : "A"},${dateOf(3)},0,0,mobile`);
  }
  return rows.join("\n") + "\n";
}
