import assert from "node:assert/strict";
import { failureHints, PermanentError, TemporaryError } from "./errors.ts";

const hinted = (fields: Record<string, unknown>, message = "hinted") =>
  Object.assign(new Error(message), fields);

Deno.test("failureHints: reads retryAfterMs and eventReason along the cause chain", () => {
  const refused = hinted(
    { retryAfterMs: 5_000, eventReason: "CredentialsRefused" },
    "Keystone refused the credentials",
  );
  const table: Array<[string, unknown, ReturnType<typeof failureHints>]> = [
    ["not an error", "boom", {}],
    ["a plain error", new Error("boom"), {}],
    ["on the error itself", refused, {
      retryAfterMs: 5_000,
      event: {
        reason: "CredentialsRefused",
        message: "Keystone refused the credentials",
      },
    }],
    [
      "through a TemporaryError",
      new TemporaryError("observing failed", { cause: refused }),
      {
        retryAfterMs: 5_000,
        event: {
          reason: "CredentialsRefused",
          message: "Keystone refused the credentials",
        },
      },
    ],
    [
      "the first of each wins",
      hinted({ retryAfterMs: 10 }, "outer"),
      { retryAfterMs: 10 },
    ],
    [
      "a PermanentError's cause is read too",
      new PermanentError("x", {
        cause: hinted({ retryAfterMs: 7 }, "mid"),
      }),
      { retryAfterMs: 7 },
    ],
    ["a negative delay is ignored", hinted({ retryAfterMs: -1 }), {}],
    ["a non-number delay is ignored", hinted({ retryAfterMs: "5" }), {}],
    ["an infinite delay is ignored", hinted({ retryAfterMs: Infinity }), {}],
    [
      "a reason that is not CamelCase is ignored",
      hinted({ eventReason: "no spaces allowed" }),
      {},
    ],
  ];
  for (const [name, err, want] of table) {
    assert.deepEqual(failureHints(err), want, name);
  }
});

Deno.test("failureHints: a cause cycle ends", () => {
  const a = new Error("a");
  const b = new Error("b", { cause: a });
  Object.defineProperty(a, "cause", { value: b });
  assert.deepEqual(failureHints(a), {});
});
