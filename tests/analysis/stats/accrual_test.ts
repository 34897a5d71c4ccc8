import assert from "node:assert/strict";
import {
  daysLeft,
  newestLooksIncomplete,
  usersPerDay,
} from "../../../src/analysis/stats/accrual.ts";

const series = (...cumulative: number[]) =>
  cumulative.map((cumulativeUsers) => ({ cumulativeUsers }));

Deno.test("usersPerDay averages the new users of the last 7 dates", () => {
  // New users per date: 10, 20, 30, 40, 50, 60, 70, 80, 90; the last 7 from 30 on: 420 / 7 = 60.
  assert.equal(usersPerDay(series(10, 30, 60, 100, 150, 210, 280, 360, 450)), 60);
  // Fewer than 7 dates: all of them, the first date's users counting as new (10 + 20 + 30) / 3.
  assert.equal(usersPerDay(series(10, 30, 60)), 20);
  assert.equal(usersPerDay([]), null);
});

Deno.test("usersPerDay leaves provisional dates out of the rate", () => {
  const points = [...series(100, 200, 300), { cumulativeUsers: 310, provisional: true }];
  assert.equal(usersPerDay(points), 100);
  assert.equal(usersPerDay([{ cumulativeUsers: 5, provisional: true }]), null);
});

Deno.test("daysLeft rounds up, is 0 once reached and null without a target or a rate", () => {
  assert.equal(daysLeft(1000, 400, 60), 10);
  assert.equal(daysLeft(1000, 401, 60), 10); // 9.98 → 10
  assert.equal(daysLeft(1000, 340, 60), 11);
  assert.equal(daysLeft(1000, 1000, 60), 0);
  assert.equal(daysLeft(1000, 1200, null), 0);
  assert.equal(daysLeft(null, 10, 60), null);
  assert.equal(daysLeft(1000, 10, null), null);
  assert.equal(daysLeft(1000, 10, 0), null);
});

/** Cumulative users from new users per date. */
const running = (...added: number[]) =>
  added.map((_, i) => added.slice(0, i + 1).reduce((a, b) => a + b));

Deno.test("newestLooksIncomplete flags a newest date under half the median of the 7 before it", () => {
  // The 7 dates before the newest: 90 100 100 110 120 100 95 → median 100; 49 is under 50.
  const before = [500, 90, 100, 100, 110, 120, 100, 95];
  assert.equal(newestLooksIncomplete([running(...before, 49)]), true);
  assert.equal(newestLooksIncomplete([running(...before, 50)]), false);
  // Every variant must look incomplete.
  assert.equal(newestLooksIncomplete([running(...before, 10), running(...before, 80)]), false);
  assert.equal(newestLooksIncomplete([running(...before, 10), running(...before, 20)]), true);
  // A variant without new users before is not judged; with none judged, nothing is flagged.
  assert.equal(newestLooksIncomplete([running(...before, 10), running(0, 0, 0, 0, 0)]), true);
  assert.equal(newestLooksIncomplete([running(0, 0, 0, 0, 0)]), false);
  // Fewer than 3 dates before the newest: not judged. 3 dates: their median.
  assert.equal(newestLooksIncomplete([running(100, 100, 1)]), false);
  assert.equal(newestLooksIncomplete([running(100, 100, 100, 1)]), true);
  // An even number of earlier dates (4): the mean of the middle two, (100 + 200) / 2 = 150.
  assert.equal(newestLooksIncomplete([running(100, 100, 200, 200, 74)]), true);
  assert.equal(newestLooksIncomplete([running(100, 100, 200, 200, 75)]), false);
});
