import assert from "node:assert/strict";
import fc from "fast-check";
import { departureOf } from "../../openstack/informer/nova_records.ts";

Deno.test("departureOf: where a record says the VM went, or undefined", () => {
  const r = (
    migrationType: string,
    status: string,
    destCompute: string | null = "d",
  ) => ({
    instanceUuid: "a",
    migrationType,
    status,
    destCompute,
  });
  const rows: Array<[string, ReturnType<typeof r>, string | undefined]> = [
    [
      "live completed: ACTIVE there",
      r("live-migration", "completed"),
      "ACTIVE",
    ],
    [
      "cold finished: VERIFY_RESIZE there",
      r("migration", "finished"),
      "VERIFY_RESIZE",
    ],
    ["cold confirmed: there", r("migration", "confirmed"), "ACTIVE"],
    [
      "a user's resize finished: VERIFY_RESIZE",
      r("resize", "finished"),
      "VERIFY_RESIZE",
    ],
    ["in progress: ask Nova", r("live-migration", "running"), undefined],
    ["failed: ask Nova (deleted?)", r("live-migration", "error"), undefined],
    [
      "no destination: ask Nova",
      r("live-migration", "completed", null),
      undefined,
    ],
  ];
  for (const [name, record, want] of rows) {
    const s = departureOf(record, 1024);
    assert.equal(s?.status, want, name);
    if (s !== undefined) assert.equal(s.host, "d", name);
  }
});

Deno.test("property: departureOf tells a place only for a finished record with a destination", () => {
  fc.assert(fc.property(
    fc.constantFrom("live-migration", "migration", "resize", "evacuation"),
    fc.constantFrom(
      "queued",
      "running",
      "post-migrating",
      "completed",
      "finished",
      "confirmed",
      "error",
      "reverted",
      "weird",
    ),
    fc.option(fc.constantFrom("d", "e"), { nil: null }),
    (migrationType, status, destCompute) => {
      const s = departureOf(
        { instanceUuid: "a", migrationType, status, destCompute },
        1,
      );
      const done = ["completed", "finished", "confirmed"].includes(status);
      assert.equal(s !== undefined, done && destCompute !== null);
      if (s !== undefined) assert.equal(s.host, destCompute);
    },
  ));
});
