import { strict as assert } from "node:assert";
import type { Unplaced } from "./assign.ts";
import { capacityVerdict, PLACEMENT_CAVEAT } from "./verdict.ts";

function unplaced(id: string, host: string): Unplaced {
  return {
    vm: {
      id,
      name: `vm-${id}`,
      host,
      resources: {},
      required: [],
      forbidden: [],
    },
    cause: "no_candidate",
    candidates: 0,
    short: [],
    why: "Placement offers no host outside the drain for MEMORY_MB=1",
  };
}

Deno.test("capacityVerdict: table", async (t) => {
  const cases: {
    name: string;
    host: string;
    per: [string, number][];
    unplaced: Unplaced[];
    status: "True" | "False";
    match: RegExp;
  }[] = [
    {
      name: "fits",
      host: "a",
      per: [["a", 38]],
      unplaced: [],
      status: "True",
      match: /^all 38 VMs fit on other hosts \(/,
    },
    {
      name: "fits in a wave",
      host: "a",
      per: [["a", 2], ["b", 3]],
      unplaced: [],
      status: "True",
      match:
        /^all 2 VMs fit on other hosts together with the 3 VMs of b \(one wave\)/,
    },
    {
      name: "a wave is judged as a whole, own VMs named first",
      host: "a",
      per: [["a", 2], ["b", 3]],
      unplaced: [unplaced("x", "b"), unplaced("y", "a")],
      status: "False",
      match:
        /^2 of 5 VMs of the wave \(hosts a, b\) have no target: vm-y \(y\) on a: .*; vm-x \(x\) on b: /,
    },
    {
      name: "one VM has no target",
      host: "a",
      per: [["a", 5]],
      unplaced: [unplaced("big", "a")],
      status: "False",
      match: /^1 of 5 VMs have no target: vm-big \(big\): Placement offers/,
    },
    {
      name: "many are cut short",
      host: "a",
      per: [["a", 20]],
      unplaced: Array.from({ length: 12 }, (_, i) => unplaced(`v${i}`, "a")),
      status: "False",
      match: /; and 2 more/,
    },
  ];
  for (const c of cases) {
    await t.step(c.name, () => {
      const v = capacityVerdict({
        host: c.host,
        vmsPerHost: new Map(c.per),
        unplaced: c.unplaced,
      });
      assert.equal(v.status, c.status);
      assert.match(v.message, c.match);
      assert.ok(v.message.includes(PLACEMENT_CAVEAT));
    });
  }
});
