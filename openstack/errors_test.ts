import assert from "node:assert/strict";
import {
  BadRequestError,
  ConflictError,
  errorForStatus,
  ForbiddenError,
  InvalidResponseError,
  NotFoundError,
  OpenStackError,
  parseFault,
  UnauthorizedError,
  UnavailableError,
} from "./errors.ts";

Deno.test("errors: parseFault reads Nova, Keystone and Placement bodies", () => {
  assert.deepEqual(
    parseFault(
      '{"conflictingRequest":{"code":409,"message":"busy"}}',
      "Conflict",
    ),
    { message: "busy" },
  );
  assert.deepEqual(
    parseFault(
      '{"error":{"code":401,"message":"no","title":"Unauthorized"}}',
      "x",
    ),
    { message: "no" },
  );
  assert.deepEqual(
    parseFault(
      '{"errors":[{"status":409,"title":"Conflict","detail":"generation","code":"placement.concurrent_update","request_id":"r"}]}',
      "x",
    ),
    { message: "generation", code: "placement.concurrent_update" },
  );
  assert.deepEqual(
    parseFault("<html>\n  Bad   Gateway</html>", "Bad Gateway"),
    {
      message: "<html> Bad Gateway</html>",
    },
  );
  assert.deepEqual(parseFault("", "Service Unavailable"), {
    message: "Service Unavailable",
  });
  assert.deepEqual(parseFault("[1]", "Teapot"), { message: "Teapot" });
});

Deno.test("errors: errorForStatus maps statuses to typed errors with details", () => {
  const cases: [number, new (...a: never[]) => OpenStackError][] = [
    [400, BadRequestError],
    [401, UnauthorizedError],
    [403, ForbiddenError],
    [404, NotFoundError],
    [409, ConflictError],
    [429, UnavailableError],
    [500, UnavailableError],
    [503, UnavailableError],
    [406, InvalidResponseError],
  ];
  for (const [status, cls] of cases) {
    const e = errorForStatus(status, "msg", {
      requestId: "req-1",
      method: "GET",
      url: "http://x/y",
    });
    assert.ok(e instanceof cls, `${status} -> ${cls.name}`);
    assert.ok(e instanceof OpenStackError);
    assert.equal(e.status, status);
    assert.equal(e.requestId, "req-1");
    assert.equal(e.name, cls.name);
  }
  assert.equal(errorForStatus(406, "msg").message, "HTTP 406: msg");
});
