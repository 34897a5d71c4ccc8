import assert from "node:assert/strict";
import { daysLeft, usersPerDay } from "../../../src/analysis/stats/accrual.ts";

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
