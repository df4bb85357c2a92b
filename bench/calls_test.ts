import assert from "node:assert/strict";
import { callsByRoute, totalCalls } from "./calls.ts";

Deno.test("callsByRoute: Keystone left out, most first; totalCalls sums them", () => {
  const routes = callsByRoute({
    "GET /compute/v2.1/servers/detail": 3,
    "POST /identity/v3/auth/tokens": 4,
    "POST /compute/v2.1/servers/{id}/action": 5,
    "GET /placement/resource_providers/{uuid}/usages": 1,
  });
  assert.deepEqual(Object.entries(routes), [
    ["POST /compute/v2.1/servers/{id}/action", 5],
    ["GET /compute/v2.1/servers/detail", 3],
    ["GET /placement/resource_providers/{uuid}/usages", 1],
  ]);
  assert.equal(totalCalls(routes), 9);
  assert.equal(totalCalls(callsByRoute({})), 0);
});
