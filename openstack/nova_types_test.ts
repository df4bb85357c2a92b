import assert from "node:assert/strict";
import { serverSchema } from "./nova_types.ts";

Deno.test("nova types: a server is turned into the client's shape; fault only when present", () => {
  const s = serverSchema.parse({
    id: "i",
    name: "n",
    status: "ERROR",
    "OS-EXT-SRV-ATTR:host": "h",
    "OS-EXT-STS:task_state": null,
    "OS-EXT-STS:power_state": 0,
    flavor: { ram: 1024, vcpus: 1, original_name: "m1" },
    fault: { code: 500, message: "boom", created: "2026-01-01T00:00:00Z" },
  });
  assert.deepEqual(s, {
    id: "i",
    name: "n",
    status: "ERROR",
    host: "h",
    hypervisorHostname: null,
    taskState: null,
    vmState: null,
    powerState: 0,
    flavor: { ramMb: 1024, vcpus: 1, originalName: "m1" },
    fault: { code: 500, message: "boom" },
  });
  assert.equal(serverSchema.safeParse({ id: "i" }).success, false);
});
