import assert from "node:assert/strict";
import { ApiError } from "../../src/http/errors.ts";
import type { Aggregate } from "../../src/analysis/aggregate/aggregate_types.ts";
import { checkSettingsAgainstData, validateSettings } from "../../src/analysis/settings.ts";

function assertInvalid(run: () => unknown, message: RegExp): void {
  assert.throws(run, (error: unknown) => {
    assert.ok(error instanceof ApiError, `expected an ApiError, got ${error}`);
    assert.equal(error.code, "invalid_settings");
    assert.equal(error.status, 400);
    assert.match(error.message, message);
    return true;
  });
}

Deno.test("validateSettings accepts the example of the settings reference", () => {
  // Verbatim from docs/api.md, "Settings".
  const example = JSON.parse(`{"key_metric": "revenue", "control": "A", "expected_split": {"A": 0.5,
    "B": 0.5}, "mde": 0.05, "alpha": 0.05, "power": 0.8, "target_users_per_variant": 50000,
    "metric_kinds": {"visits": "numeric"}}`);
  assert.deepEqual(validateSettings(example), example);
});

Deno.test("validateSettings accepts an empty object and treats null fields as absent", () => {
  assert.deepEqual(validateSettings({}), {});
  assert.deepEqual(validateSettings({ control: null, mde: null, key_metric: "x" }), {
    key_metric: "x",
  });
});

Deno.test("validateSettings accepts a split that sums to 1 within 1e-9", () => {
  // 0.1 + 0.2 + 0.7 is 0.9999999999999999 in doubles; 1 + 5e-10 is inside the tolerance.
  assert.ok(validateSettings({ expected_split: { A: 0.1, B: 0.2, C: 0.7 } }));
  assert.ok(validateSettings({ expected_split: { A: 0.5, B: 0.5 + 5e-10 } }));
});

Deno.test("validateSettings rejects a body that is not an object", () => {
  for (const input of [null, [], "settings", 5, true]) {
    assertInvalid(() => validateSettings(input), /expected a JSON object/);
  }
});

Deno.test("validateSettings rejects an unknown field", () => {
  assertInvalid(() => validateSettings({ keymetric: "revenue" }), /unknown field "keymetric"/);
});

Deno.test("validateSettings rejects each malformed field", () => {
  const cases: [Record<string, unknown>, RegExp][] = [
    [{ key_metric: "" }, /key_metric must be a non-empty string/],
    [{ key_metric: 5 }, /key_metric must be a non-empty string, got 5/],
    [{ control: ["A"] }, /control must be a non-empty string, got an array/],
    [{ expected_split: [0.5, 0.5] }, /expected_split must be an object/],
    [{ expected_split: {} }, /expected_split names no variant/],
    [{ expected_split: { A: 0.5, B: "0.5" } }, /share of "B" must be a positive number/],
    [{ expected_split: { A: 1.5, B: -0.5 } }, /share of "B" must be a positive number/],
    [{ expected_split: { A: 1, B: 0 } }, /share of "B" must be a positive number/],
    [{ expected_split: { A: 0.5, B: 0.4 } }, /shares must sum to 1, got 0.9/],
    [{ expected_split: { A: 0.5, B: 0.5 + 2e-9 } }, /shares must sum to 1/],
    [{ mde: 0 }, /mde must be a number in \(0, 10\]/],
    [{ mde: 10.5 }, /mde must be a number in \(0, 10\]/],
    [{ mde: "0.05" }, /mde must be a number/],
    [{ alpha: 0 }, /alpha must be a number in \(0, 1\)/],
    [{ alpha: 1 }, /alpha must be a number in \(0, 1\)/],
    [{ power: 1 }, /power must be a number in \(0, 1\)/],
    [{ power: -0.2 }, /power must be a number in \(0, 1\)/],
    [{ target_users_per_variant: 0 }, /target_users_per_variant must be a positive integer/],
    [{ target_users_per_variant: 1.5 }, /target_users_per_variant must be a positive integer/],
    [{ target_users_per_variant: "100" }, /target_users_per_variant must be a positive integer/],
    [{ metric_kinds: ["visits"] }, /metric_kinds must be an object/],
    [{ metric_kinds: { visits: "binary" } }, /metric_kinds of "visits" must be "conversion" or/],
  ];
  for (const [input, message] of cases) assertInvalid(() => validateSettings(input), message);
});

Deno.test("validateSettings accepts the edges of each range", () => {
  assert.deepEqual(validateSettings({ mde: 10, alpha: 1e-9, power: 0.999999 }), {
    mde: 10,
    alpha: 1e-9,
    power: 0.999999,
  });
  assert.deepEqual(validateSettings({ target_users_per_variant: 1 }), {
    target_users_per_variant: 1,
  });
});

const data: Aggregate = {
  rows: 4,
  variants: ["A", "B"],
  users: { A: 2, B: 2 },
  excludedUsers: 0,
  metrics: [
    { name: "converted", kind: "conversion", detectedKind: "conversion" },
    { name: "revenue", kind: "numeric", detectedKind: "numeric" },
  ],
  stats: {},
  daily: [],
};

Deno.test("checkSettingsAgainstData accepts settings that fit the data", () => {
  checkSettingsAgainstData({}, data);
  checkSettingsAgainstData({
    key_metric: "revenue",
    control: "B",
    expected_split: { B: 0.3, A: 0.7 },
    metric_kinds: { converted: "numeric" },
  }, data);
});

Deno.test("checkSettingsAgainstData rejects names the data does not have", () => {
  assertInvalid(
    () => checkSettingsAgainstData({ key_metric: "clicks" }, data),
    /key_metric "clicks" is not a metric column of the dataset \(metric columns: "converted", "revenue"\)/,
  );
  assertInvalid(
    () => checkSettingsAgainstData({ control: "C" }, data),
    /control "C" is not a variant of the dataset \(variants: "A", "B"\)/,
  );
  assertInvalid(
    () => checkSettingsAgainstData({ metric_kinds: { country: "numeric" } }, data),
    /metric_kinds names "country", which is not a metric column/,
  );
});

Deno.test("checkSettingsAgainstData refuses a conversion kind for a column with other values", () => {
  assertInvalid(
    () => checkSettingsAgainstData({ metric_kinds: { revenue: "conversion" } }, data),
    /declares "revenue" a conversion, but the column holds values other than 0 and 1/,
  );
});

Deno.test("checkSettingsAgainstData requires the split to name exactly the variants", () => {
  assertInvalid(
    () => checkSettingsAgainstData({ expected_split: { A: 1 } }, data),
    /expected_split must name exactly the variants "A", "B" \(missing "B"\)/,
  );
  assertInvalid(
    () => checkSettingsAgainstData({ expected_split: { A: 0.4, B: 0.3, C: 0.3 } }, data),
    /\(not in the data "C"\)/,
  );
});
