import assert from "node:assert/strict";
import fc from "fast-check";
import { hostsToCreate } from "./discovery.ts";

Deno.test("hostsToCreate: table", () => {
  assert.deepEqual(hostsToCreate([], new Set()), { create: [], invalid: [] });
  assert.deepEqual(
    hostsToCreate(["node2", "node1", "node1", "node3"], new Set(["node3"])),
    { create: ["node1", "node2"], invalid: [] },
  );
  assert.deepEqual(
    hostsToCreate(["Node_1", "-x", "a".repeat(254), "ok.example"], new Set()),
    { create: ["ok.example"], invalid: ["-x", "Node_1", "a".repeat(254)] },
  );
});

Deno.test("hostsToCreate: exactly the valid hosts without a Hypervisor", () => {
  const host = fc.stringMatching(/^[a-zA-Z0-9_.-]{1,6}$/);
  fc.assert(fc.property(
    fc.array(host, { maxLength: 10 }),
    fc.uniqueArray(host, { maxLength: 5 }),
    (hosts, existingList) => {
      const existing = new Set(existingList);
      const { create, invalid } = hostsToCreate(hosts, existing);
      for (const name of create) {
        assert.ok(hosts.includes(name) && !existing.has(name));
      }
      assert.equal(new Set(create).size, create.length);
      for (const h of hosts) {
        assert.ok(
          existing.has(h) || create.includes(h) || invalid.includes(h),
          `${h} is accounted for`,
        );
      }
    },
  ));
});
