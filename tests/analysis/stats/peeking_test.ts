/**
 * Why the sequential interval exists: A/A experiments (no true difference) looked at after every
 * delivery. Stopping at the first look whose fixed-horizon p-value is below 0.05 declares a
 * difference far more often than 5 %; stopping when the always-valid interval excludes 0 stays
 * near (in fact below) 5 %. Seeded, so the rates are fixed (fixed horizon 24.8 %, sequential
 * 0.8 %, the fixed horizon at the last look alone 5.2 %); about a second.
 */
import assert from "node:assert/strict";
import { SeededRandom } from "../../../src/analysis/stats/_math.ts";
import { type ArmStatistics, compareArms } from "../../../src/analysis/stats/inference.ts";

const EXPERIMENTS = 500;
const LOOKS = 20;
/** New users per arm between two looks (a daily delivery). */
const USERS_PER_LOOK = 100;

class Arm {
  n = 0;
  sum = 0;
  sumSquares = 0;

  add(x: number): void {
    this.n++;
    this.sum += x;
    this.sumSquares += x * x;
  }

  statistics(): ArmStatistics {
    const mean = this.sum / this.n;
    return { n: this.n, mean, variance: (this.sumSquares - this.sum * mean) / (this.n - 1) };
  }
}

Deno.test("peeking 20 times at 500 A/A experiments: fixed-horizon stops inflate, sequential ones do not", () => {
  const random = new SeededRandom(20260321);
  const options = { alpha: 0.05, tuning: 5000 };
  let fixedStops = 0;
  let sequentialStops = 0;
  let fixedAtLastLook = 0;
  for (let e = 0; e < EXPERIMENTS; e++) {
    const a = new Arm();
    const b = new Arm();
    let fixedStopped = false;
    let sequentialStopped = false;
    for (let look = 1; look <= LOOKS; look++) {
      // Revenue-like values: mean 10, sd 4, the same in both arms.
      for (let i = 0; i < USERS_PER_LOOK; i++) {
        a.add(10 + 4 * random.normal());
        b.add(10 + 4 * random.normal());
      }
      const found = compareArms(a.statistics(), b.statistics(), options);
      assert.ok(!("reason" in found));
      if (found.pValue < 0.05) fixedStopped = true;
      if (found.sequentialCi[0] > 0 || found.sequentialCi[1] < 0) sequentialStopped = true;
      if (look === LOOKS && found.pValue < 0.05) fixedAtLastLook++;
    }
    if (fixedStopped) fixedStops++;
    if (sequentialStopped) sequentialStops++;
  }
  const fixedRate = fixedStops / EXPERIMENTS;
  const sequentialRate = sequentialStops / EXPERIMENTS;
  const lastLookRate = fixedAtLastLook / EXPERIMENTS;
  console.log(
    `false stops over ${LOOKS} looks: fixed horizon ${fixedRate}, sequential ${sequentialRate}; ` +
      `fixed horizon at the last look only ${lastLookRate}`,
  );
  // One look at the planned end is calibrated (≈ 5 %, binomial sd ≈ 1 %) …
  assert.ok(lastLookRate > 0.02 && lastLookRate < 0.08, `last look ${lastLookRate}`);
  // … peeking at every look is not …
  assert.ok(fixedRate > 0.15, `fixed horizon ${fixedRate}`);
  // … and the always-valid interval keeps its promise.
  assert.ok(sequentialRate <= 0.06, `sequential ${sequentialRate}`);
});
