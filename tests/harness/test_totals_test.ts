import assert from "node:assert/strict";
import {
  summaryOf,
  SummaryScanner,
  type TestPart,
  totalLines,
} from "./test_totals.ts";

Deno.test("test totals: summaryOf reads deno test's summary line, nothing else", () => {
  const ESC = String.fromCharCode(27);
  const rows: [string, ReturnType<typeof summaryOf>][] = [
    ["ok | 1377 passed (12 steps) | 0 failed (35m)", {
      passed: 1377,
      failed: 0,
      ignored: 0,
    }],
    ["FAILED | 60 passed | 2 failed | 3 ignored (10m)", {
      passed: 60,
      failed: 2,
      ignored: 3,
    }],
    ["ok | 5 passed | 0 failed | 1 ignored | 0 filtered out (1s)", {
      passed: 5,
      failed: 0,
      ignored: 1,
    }],
    [`${ESC}[0m${ESC}[32mok${ESC}[0m | 4 passed | 0 failed (2s)`, {
      passed: 4,
      failed: 0,
      ignored: 0,
    }],
    ["tests: 4 passed, 0 failed", undefined],
    ["a test ... ok (2ms)", undefined],
    ["ok | nothing", undefined],
  ];
  for (const [line, want] of rows) {
    assert.deepEqual(summaryOf(line), want, line);
  }
});

Deno.test("test totals: the scanner keeps the last summary across cut chunks", () => {
  const s = new SummaryScanner();
  assert.equal(s.counts, undefined);
  s.push("running 3 tests\nok | 3 pass");
  assert.equal(s.counts, undefined);
  s.push("ed | 0 failed (1s)\nFAILED | 7 passed | 1 fa");
  assert.deepEqual(s.counts, { passed: 3, failed: 0, ignored: 0 });
  s.push("iled (2s)");
  s.end();
  assert.deepEqual(s.counts, { passed: 7, failed: 1, ignored: 0 });
});

Deno.test("test totals: the last line totals every part, a part without summary counts", () => {
  const main = (passed: number, failed = 0, ignored = 0, code = 0) => ({
    name: "main suite",
    counts: { passed, failed, ignored },
    code,
  });
  const lane = (
    counts: TestPart["counts"],
    code = 0,
  ): TestPart => ({ name: "real-OpenStack lane", counts, code });
  const rows: [string, TestPart[], string[]][] = [
    ["main alone", [main(1377)], ["tests: 1377 passed, 0 failed"]],
    ["main with ignored", [main(10, 0, 2)], [
      "tests: 10 passed, 0 failed, 2 skipped",
    ]],
    ["main and lane", [
      main(1377, 0, 4),
      lane({ passed: 62, failed: 1, ignored: 0 }, 1),
    ], [
      "tests: main suite: 1377 passed, 0 failed, 4 skipped",
      "tests: real-OpenStack lane: 62 passed, 1 failed",
      "tests: 1439 passed, 1 failed, 4 skipped",
    ]],
    ["lane crashed before its summary", [main(5), lane(undefined, 1)], [
      "tests: main suite: 5 passed, 0 failed",
      "tests: real-OpenStack lane: 0 passed, 1 failed (ended with exit 1 before its summary: counted as 1 failed)",
      "tests: 5 passed, 1 failed",
    ]],
    ["main exit 1 with all passed", [main(5, 0, 0, 1)], [
      "tests: main suite (exit 1 after its tests: counted as 1 failed)",
      "tests: 5 passed, 1 failed",
    ]],
  ];
  for (const [name, parts, want] of rows) {
    assert.deepEqual(totalLines(parts), want, name);
  }
});
