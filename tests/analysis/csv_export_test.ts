import assert from "node:assert/strict";
import { analysisCsv, csvCell } from "../../src/analysis/csv_export.ts";

Deno.test("csvCell writes numbers in their shortest round-trip form and nothing for no value", () => {
  for (const x of [0.1, -0.068, 1e-300, 123456789.123, 5e-324, -1.7976931348623157e308]) {
    assert.equal(Number(csvCell(x)), x);
  }
  assert.equal(csvCell(0.1), "0.1");
  assert.equal(csvCell(-2), "-2"); // a number, not text: no guard
  assert.equal(csvCell(null), "");
  assert.equal(csvCell(undefined), "");
  assert.equal(csvCell(NaN), "");
});

Deno.test("csvCell guards text a spreadsheet would run and quotes what RFC 4180 needs", () => {
  assert.equal(csvCell('=HYPERLINK("x")'), '"\'=HYPERLINK(""x"")"');
  assert.equal(csvCell("+1"), "'+1");
  assert.equal(csvCell("-B"), "'-B");
  assert.equal(csvCell("@sum"), "'@sum");
  assert.equal(csvCell("\tA"), "'\tA");
  assert.equal(csvCell("a,b"), '"a,b"');
  assert.equal(csvCell("two\nlines"), '"two\nlines"');
  assert.equal(csvCell("plain name"), "plain name");
});

Deno.test("analysisCsv writes the control's row with empty comparison cells", () => {
  const text = analysisCsv({
    control: "A",
    metrics: [{
      name: "converted",
      variants: [{ name: "A", users: 10, mean: 0.1 }, { name: "=B", users: 12, mean: 0.25 }],
      comparisons: [{
        name: "=B",
        lift: 1.5,
        lift_se: 0.5,
        ci: [0.5, 2.5],
        p_value: 0.01,
        p_value_adjusted: 0.01,
        sequential_ci: [-0.5, 3.5],
        sequential_p_value: 0.2,
        chance_to_beat_control: 0.99,
        decision: "inconclusive",
      }],
    }],
  });
  assert.equal(
    text,
    "metric,variant,users,mean,lift,lift_se,ci_low,ci_high,p_value,p_value_adjusted," +
      "sequential_ci_low,sequential_ci_high,sequential_p_value,chance_to_beat_control,decision\r\n" +
      "converted,A,10,0.1,,,,,,,,,,,\r\n" +
      "converted,'=B,12,0.25,1.5,0.5,0.5,2.5,0.01,0.01,-0.5,3.5,0.2,0.99,inconclusive\r\n",
  );
  assert.equal(analysisCsv({ control: null, metrics: null }).split("\r\n").length, 2);
});
