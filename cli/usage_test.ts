import assert from "node:assert/strict";
import { parseCommand, timeoutFlag, UsageError } from "./usage.ts";

const OPTIONS = {
  wait: { type: "boolean", default: false },
  "allow-unknown": { type: "boolean", default: false },
  watch: { type: "boolean", short: "w", default: false },
  reason: { type: "string" },
} as const;

Deno.test("parseCommand: booleans take kubectl's =true/=false, the last one wins", () => {
  const rows: [string[], Record<string, unknown>][] = [
    [[], { wait: false, watch: false }],
    [["--wait"], { wait: true }],
    [["--wait=true"], { wait: true }],
    [["--wait=false"], { wait: false }],
    [["--wait=1"], { wait: true }],
    [["--wait=F"], { wait: false }],
    [["--wait", "--wait=false"], { wait: false }],
    [["--wait=false", "--wait"], { wait: true }],
    [["--allow-unknown=false", "--wait=True"], {
      "allow-unknown": false,
      wait: true,
    }],
    [["-w"], { watch: true }],
    [["--watch=false"], { watch: false }],
    // a string flag's value is never read as a flag
    [["--reason", "wait=false", "--wait"], {
      reason: "wait=false",
      wait: true,
    }],
    [["--reason", "x", "--wait=false"], { reason: "x", wait: false }],
    [["--reason=x", "--wait=true"], { reason: "x", wait: true }],
  ];
  for (const [args, want] of rows) {
    const { values } = parseCommand("drain", args, OPTIONS);
    for (const [k, v] of Object.entries(want)) {
      assert.equal((values as Record<string, unknown>)[k], v, args.join(" "));
    }
  }
  // pflag's -o=VALUE
  assert.equal(
    parseCommand("status", ["-o=jsonpath={.a}"], {
      output: { type: "string", short: "o" },
    }).values.output,
    "jsonpath={.a}",
  );
  // what follows `--` is positional
  assert.deepEqual(
    parseCommand("drain", ["--", "--wait=false"], OPTIONS).positionals,
    ["--wait=false"],
  );
});

Deno.test("parseCommand: a boolean's bad value names it and what is expected", () => {
  assert.throws(
    () => parseCommand("drain", ["--wait=yes"], OPTIONS),
    (e: Error) =>
      e instanceof UsageError &&
      e.message === '--wait "yes" is not valid: expected true or false',
  );
});

Deno.test("timeoutFlag: durations; a bad one is a usage error", () => {
  assert.equal(timeoutFlag("wait", "5m"), 300_000);
  assert.equal(timeoutFlag("wait", "3"), 3000);
  assert.equal(timeoutFlag("wait", undefined), 0);
  assert.throws(() => timeoutFlag("wait", "3 s"), UsageError);
});
