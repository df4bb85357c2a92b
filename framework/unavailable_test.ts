import assert from "node:assert/strict";
import fc from "fast-check";
import { ApiError, PermanentError, TemporaryError } from "./errors.ts";
import { isUnavailable, isUnavailableStatus } from "./unavailable.ts";

const api = (status: number) => new ApiError("GET", "/x", status, "R", "m");

Deno.test("isUnavailable: outages versus other failures", () => {
  const cases: [string, unknown, boolean][] = [
    ["503 from the API server", api(503), true],
    ["500", api(500), true],
    ["504", api(504), true],
    ["429 too many requests", api(429), true],
    ["404", api(404), false],
    ["409 conflict", api(409), false],
    ["403 forbidden", api(403), false],
    ["422 invalid", api(422), false],
    [
      "fetch: connection refused",
      new TypeError(
        "error sending request for url (https://127.0.0.1:1/api): client error (Connect): tcp connect error: Connection refused (os error 111)",
      ),
      true,
    ],
    ["fetch failed (Deno's client)", new TypeError("fetch failed"), true],
    [
      "fetch: connection reset",
      new TypeError("connection reset by peer (os error 104)"),
      true,
    ],
    [
      "Deno.errors.ConnectionRefused",
      new Deno.errors.ConnectionRefused("x"),
      true,
    ],
    ["Deno.errors.ConnectionReset", new Deno.errors.ConnectionReset("x"), true],
    ["Deno.errors.TimedOut", new Deno.errors.TimedOut("x"), true],
    [
      "AbortSignal.timeout",
      new DOMException("signal timed out", "TimeoutError"),
      true,
    ],
    ["an abort is no outage", new DOMException("aborted", "AbortError"), false],
    ["a TypeError of a bug", new TypeError("x is not a function"), false],
    ["a plain Error", new Error("Connection refused"), false],
    ["a string", "Connection refused", false],
    ["undefined", undefined, false],
    [
      "wrapped in a TemporaryError",
      new TemporaryError("write failed", { cause: api(502) }),
      true,
    ],
    [
      "a client error with a status field (another client's 503)",
      Object.assign(new Error("Service Unavailable"), { status: 503 }),
      true,
    ],
    [
      "another client's 404 wrapping a network error is a 404",
      Object.assign(new Error("nf"), {
        status: 404,
        cause: new Deno.errors.ConnectionRefused("x"),
      }),
      false,
    ],
    [
      "another client's network failure (no status, cause chain)",
      Object.assign(new Error("GET /servers failed"), {
        status: undefined,
        cause: new TypeError("error sending request: Connection refused"),
      }),
      true,
    ],
    [
      "a permanent error wrapping a 404",
      new PermanentError("gone", { cause: api(404) }),
      false,
    ],
  ];
  for (const [name, err, want] of cases) {
    assert.equal(isUnavailable(err), want, name);
  }
});

Deno.test("isUnavailable: a cycle in the cause chain ends", () => {
  const a = new Error("a") as Error & { cause?: unknown };
  const b = new Error("b", { cause: a });
  a.cause = b;
  assert.equal(isUnavailable(a), false);
});

Deno.test("isUnavailableStatus: exactly 429 and 5xx, at any depth of wrapping", () => {
  fc.assert(
    fc.property(
      fc.integer({ min: 100, max: 599 }),
      fc.integer({ min: 0, max: 5 }),
      (status, depth) => {
        const want = status === 429 || status >= 500;
        assert.equal(isUnavailableStatus(status), want);
        let err: unknown = api(status);
        for (let i = 0; i < depth; i++) {
          err = new TemporaryError(`wrap ${i}`, { cause: err });
        }
        assert.equal(isUnavailable(err), want);
      },
    ),
  );
});
