import assert from "node:assert/strict";
import { parseNovaTime, serverSchema } from "./nova_types.ts";

Deno.test("nova types: Nova timestamps without a zone are UTC", () => {
  assert.equal(
    parseNovaTime("2026-01-02T03:04:05.000000"),
    Date.UTC(2026, 0, 2, 3, 4, 5),
  );
  assert.equal(
    parseNovaTime("2026-01-02T03:04:05Z"),
    Date.UTC(2026, 0, 2, 3, 4, 5),
  );
  assert.equal(
    parseNovaTime("2026-01-02T04:04:05+01:00"),
    Date.UTC(2026, 0, 2, 3, 4, 5),
  );
  assert.throws(() => parseNovaTime("soon"), /not a Nova timestamp: "soon"/);
});

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
