import assert from "node:assert/strict";
import { ServiceError } from "../../src/errors.ts";
import { ERROR_STATUS } from "../../src/http/errors.ts";
import type { DatasetFacts } from "../../src/analysis/dataset_columns.ts";
import {
  checkSettingsAgainstData,
  namesData,
  type Settings,
  validateSettings,
} from "../../src/analysis/settings.ts";

function assertInvalid(run: () => unknown, message: RegExp): void {
  assert.throws(run, (error: unknown) => {
    assert.ok(error instanceof ServiceError, `expected a ServiceError, got ${error}`);
    assert.equal(error.code, "invalid_settings");
    assert.equal(ERROR_STATUS[error.code], 400);
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

Deno.test("validateSettings accepts the inference settings of the design document", () => {
  const settings = {
    inference: "frequentist",
    sequential_tuning: 20000,
    covariates: { revenue: "revenue_last_month" },
    winsorize: { revenue: 0.99 },
    lower_is_better: ["load_time"],
  };
  assert.deepEqual(validateSettings(settings), settings);
  for (const view of ["sequential", "frequentist", "bayesian"]) {
    assert.deepEqual(validateSettings({ inference: view }), { inference: view });
  }
});

Deno.test("validateSettings rejects malformed inference settings with a clear message", () => {
  const cases: [Record<string, unknown>, RegExp][] = [
    [{ inference: "bayes" }, /inference must be one of "sequential", "frequentist", "bayesian"/],
    [{ sequential_tuning: 0 }, /sequential_tuning must be a number above 0 .*, got 0/],
    [{ sequential_tuning: -5 }, /sequential_tuning must be a number above 0/],
    [{ sequential_tuning: "5000" }, /sequential_tuning must be a number/],
    [{ covariates: ["revenue_pre"] }, /covariates must be an object of metric → covariate column/],
    [{ covariates: { revenue: "" } }, /covariates of "revenue" must be a column name/],
    [{ covariates: { revenue: 3 } }, /covariates of "revenue" must be a column name, got 3/],
    [{ covariates: { revenue: "revenue" } }, /covariates of "revenue" cannot be the metric itself/],
    [{ winsorize: 0.99 }, /winsorize must be an object of metric → percentile/],
    [
      { winsorize: { revenue: 0.5 } },
      /winsorize of "revenue" must be a number \(a percentile\) in \(0.5, 1\), got 0.5/,
    ],
    [
      { winsorize: { revenue: 1 } },
      /winsorize of "revenue" must be a number .* in \(0.5, 1\), got 1/,
    ],
    [{ winsorize: { revenue: 99 } }, /winsorize of "revenue" must be/],
    [{ lower_is_better: "load_time" }, /lower_is_better must be an array of metric names/],
    [{ lower_is_better: ["load_time", ""] }, /each of lower_is_better must be a non-empty string/],
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

/** The variants and columns of a dataset, as `dataset.columns` lists them (a dimension among them). */
const data: DatasetFacts = {
  variants: ["A", "B"],
  columns: [
    { name: "converted", kind: "conversion" },
    { name: "country", kind: "dimension" },
    { name: "revenue", kind: "numeric" },
    { name: "revenue_pre", kind: "numeric" },
    { name: "visits", kind: "numeric" },
  ],
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
    /key_metric "clicks" is not a metric column of the dataset \(metric columns: "converted", "revenue", "revenue_pre", "visits"\)/,
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

Deno.test("checkSettingsAgainstData accepts inference settings that fit the data", () => {
  checkSettingsAgainstData({
    covariates: { converted: "visits" },
    winsorize: { revenue: 0.99 },
    lower_is_better: ["revenue"],
    key_metric: "converted",
  }, data);
  // A conversion column declared numeric may be capped.
  checkSettingsAgainstData({
    metric_kinds: { converted: "numeric" },
    winsorize: { converted: 0.95 },
  }, data);
  // Another column for revenue: revenue_pre is a metric of its own again.
  checkSettingsAgainstData({ covariates: { revenue: "visits" }, key_metric: "revenue_pre" }, data);
});

Deno.test("checkSettingsAgainstData refuses inference settings the data does not fit", () => {
  const cases: [Settings, RegExp][] = [
    [
      { covariates: { revenue: "revenue_before" } },
      /covariates of "revenue" names "revenue_before", which is not a column of numbers in the dataset \(metric columns: "converted", "revenue", "revenue_pre", "visits"\)/,
    ],
    [
      { covariates: { clicks: "visits" } },
      /covariates names "clicks", which is not a metric column/,
    ],
    [
      { covariates: { revenue_pre: "visits" } },
      /covariates names "revenue_pre", which is the covariate of "revenue", not a metric/,
    ],
    [
      { covariates: { converted: "visits", visits: "converted" } },
      /covariates pairs "converted" with "visits", but "converted" is also named as a covariate/,
    ],
    [
      { key_metric: "revenue_pre" },
      /key_metric names "revenue_pre", which is the covariate of "revenue"/,
    ],
    [
      { winsorize: { converted: 0.99 } },
      /winsorize names "converted", a conversion metric; only numeric metrics are capped/,
    ],
    [{ winsorize: { clicks: 0.99 } }, /winsorize names "clicks", which is not a metric column/],
    [
      { winsorize: { revenue_pre: 0.99 } },
      /winsorize names "revenue_pre", which is the covariate of "revenue"/,
    ],
    [
      { lower_is_better: ["revenue", "clicks"] },
      /lower_is_better names "clicks", which is not a metric column/,
    ],
  ];
  for (const [settings, message] of cases) {
    assertInvalid(() => checkSettingsAgainstData(settings, data), message);
  }
});

Deno.test("validateSettings takes the alert minimums as whole numbers of 0 or more", () => {
  assert.deepEqual(validateSettings({ min_users_per_variant: 500, min_days: 7 }), {
    min_users_per_variant: 500,
    min_days: 7,
  });
  assert.deepEqual(validateSettings({ min_users_per_variant: 0, min_days: 0 }), {
    min_users_per_variant: 0,
    min_days: 0,
  });
  for (const bad of [-1, 1.5, "7", true, Infinity]) {
    assertInvalid(
      () => validateSettings({ min_days: bad }),
      /^Invalid settings: min_days must be a whole number of 0 or more, got /,
    );
    assertInvalid(
      () => validateSettings({ min_users_per_variant: bad }),
      /^Invalid settings: min_users_per_variant must be a whole number of 0 or more/,
    );
  }
});

Deno.test("namesData: the settings a PUT checks against the stored data, and only those", () => {
  const plain = validateSettings({ mde: 0.1, alpha: 0.01, power: 0.9, inference: "frequentist" });
  assert.equal(namesData(plain), false);
  for (
    const field of [
      { key_metric: "revenue" },
      { control: "B" },
      { expected_split: { A: 0.5, B: 0.5 } },
      { metric_kinds: { visits: "numeric" } },
      { covariates: { revenue: "revenue_pre" } },
      { winsorize: { revenue: 0.99 } },
      { lower_is_better: ["time"] },
    ]
  ) {
    const settings = validateSettings({ mde: 0.1, ...field });
    assert.equal(namesData(settings), true, JSON.stringify(field));
    // Each of them is refused by data that lacks what it names.
    const none: DatasetFacts = {
      variants: ["X", "Y"],
      columns: [{ name: "other", kind: "numeric" }],
    };
    assert.throws(
      () => checkSettingsAgainstData(settings, none),
      ServiceError,
      JSON.stringify(field),
    );
  }
});
