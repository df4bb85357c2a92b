import assert from "node:assert/strict";
import fc from "fast-check";
import {
  ConflictError,
  errorForStatus,
  NotFoundError,
  OpenStackError,
  TimeoutError,
} from "../../openstack/mod.ts";
import { answerOf } from "./phase_act.ts";

Deno.test("answerOf: table", () => {
  const rows: Array<[string, unknown, string, boolean | undefined]> = [
    ["202", undefined, "accepted", undefined],
    [
      "409",
      new ConflictError("task_state migrating", { status: 409 }),
      "conflict",
      undefined,
    ],
    [
      "400 no valid host",
      new OpenStackError("No valid host was found.", { status: 400 }),
      "refused",
      true,
    ],
    [
      "400 other",
      new OpenStackError("Invalid input", { status: 400 }),
      "refused",
      false,
    ],
    ["404", new NotFoundError("gone", { status: 404 }), "refused", false],
    [
      "503",
      new OpenStackError("Service Unavailable", { status: 503 }),
      "unknown",
      undefined,
    ],
    ["500", new OpenStackError("boom", { status: 500 }), "unknown", undefined],
    ["timeout", new TimeoutError("timed out", {}), "unknown", undefined],
    ["reset", new TypeError("connection reset"), "unknown", undefined],
  ];
  for (const [name, err, state, transient] of rows) {
    const a = answerOf(err);
    assert.equal(a.state, state, name);
    assert.equal(a.transient, transient, name);
  }
});

Deno.test("answerOf keeps Nova's request id in the message", () => {
  const a = answerOf(
    new ConflictError("busy", { status: 409, requestId: "req-7" }),
  );
  assert.equal(a.message, "busy (request req-7)");
});

Deno.test("property: only a 4xx but 409 and 429 is a refusal; no answer or a 5xx is never one", () => {
  fc.assert(fc.property(
    fc.option(
      fc.oneof(
        fc.integer({ min: 400, max: 599 }),
        fc.constantFrom(409, 429),
      ),
      { nil: undefined },
    ),
    (status) => {
      // as the client throws them: typed by status
      const a = answerOf(
        status === undefined
          ? new OpenStackError("x", {})
          : errorForStatus(status, "x"),
      );
      const definitive = status !== undefined && status < 500 &&
        status !== 409 && status !== 429;
      assert.equal(a.state === "refused", definitive);
    },
  ));
});
