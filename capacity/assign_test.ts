import { strict as assert } from "node:assert";
import fc from "fast-check";
import {
  assignCapacity,
  type AssignInput,
  freeCapacity,
  type Inventory,
  type ProviderCapacity,
  type VmDemand,
} from "./assign.ts";

function inv(total: number, extra: Partial<Inventory> = {}): Inventory {
  return {
    total,
    reserved: 0,
    allocationRatio: 1,
    minUnit: 1,
    maxUnit: total,
    stepSize: 1,
    ...extra,
  };
}

function vm(id: string, ram: number, vcpu = 1, host = "src"): VmDemand {
  return {
    id,
    name: `vm-${id}`,
    host,
    resources: { MEMORY_MB: ram, VCPU: vcpu },
    required: [],
    forbidden: [],
  };
}

function provider(
  uuid: string,
  ram: number,
  vcpu = 64,
  usedRam = 0,
  extra: Partial<Inventory> = {},
): ProviderCapacity {
  return {
    uuid,
    inventories: { MEMORY_MB: inv(ram, extra), VCPU: inv(vcpu) },
    usages: { MEMORY_MB: usedRam, VCPU: 0 },
  };
}

function everyone(
  vms: VmDemand[],
  providers: ProviderCapacity[],
): AssignInput["candidates"] {
  return new Map(vms.map((v) => [v.id, providers.map((p) => p.uuid)]));
}

Deno.test("freeCapacity honours reserved and allocation ratio", () => {
  const cases: [Inventory, number, number][] = [
    [inv(100), 0, 100],
    [inv(100, { reserved: 10 }), 20, 70],
    [inv(16, { allocationRatio: 4 }), 60, 4],
    [inv(10, { allocationRatio: 1.5 }), 0, 15],
    [inv(10), 12, -2],
  ];
  for (const [i, used, want] of cases) {
    assert.equal(freeCapacity(i, used), want);
  }
});

Deno.test("assignCapacity: table", async (t) => {
  const cases: {
    name: string;
    vms: VmDemand[];
    providers: ProviderCapacity[];
    candidates?: AssignInput["candidates"];
    excluded?: string[];
    unplaced: string[];
    causes?: string[];
  }[] = [
    {
      name: "all fit",
      vms: [vm("a", 4), vm("b", 4)],
      providers: [provider("p", 10)],
      unplaced: [],
    },
    {
      name: "two VMs are not both counted into the last free slot",
      vms: [vm("a", 6), vm("b", 6)],
      providers: [provider("p", 10)],
      unplaced: ["b"],
      causes: ["no_room"],
    },
    {
      name: "largest first: the big one is placed, the small one is left",
      vms: [vm("small", 3), vm("big", 8)],
      providers: [provider("p", 10)],
      unplaced: ["small"],
    },
    {
      name: "usage and reserved shrink the room",
      vms: [vm("a", 5)],
      providers: [provider("p", 10, 64, 4, { reserved: 2 })],
      unplaced: ["a"],
    },
    {
      name: "allocation ratio grows it",
      vms: [vm("a", 15)],
      providers: [
        provider("p", 10, 64, 0, { allocationRatio: 1.5, maxUnit: 20 }),
      ],
      unplaced: [],
    },
    {
      name: "max_unit refuses a VM larger than one allocation may be",
      vms: [vm("a", 8)],
      providers: [provider("p", 10, 64, 0, { maxUnit: 4 })],
      unplaced: ["a"],
    },
    {
      name: "step_size refuses an amount that is not a multiple",
      vms: [vm("a", 5)],
      providers: [provider("p", 10, 64, 0, { stepSize: 2 })],
      unplaced: ["a"],
    },
    {
      name: "vCPUs count too",
      vms: [vm("a", 1, 8), vm("b", 1, 8)],
      providers: [provider("p", 100, 12)],
      unplaced: ["b"],
    },
    {
      name: "no candidate at all",
      vms: [vm("a", 1)],
      providers: [provider("p", 100)],
      candidates: new Map(),
      unplaced: ["a"],
      causes: ["no_candidate"],
    },
    {
      name: "drained providers are never a target",
      vms: [vm("a", 1)],
      providers: [provider("p", 100)],
      excluded: ["p"],
      unplaced: ["a"],
      causes: ["no_candidate"],
    },
    {
      name: "spills onto the next provider",
      vms: [vm("a", 6), vm("b", 6), vm("c", 6)],
      providers: [provider("p", 10), provider("q", 13)],
      unplaced: [],
    },
    {
      name: "a resource class the provider lacks",
      vms: [{ ...vm("a", 1), resources: { MEMORY_MB: 1, CUSTOM_GPU: 1 } }],
      providers: [provider("p", 10)],
      unplaced: ["a"],
    },
  ];
  for (const c of cases) {
    await t.step(c.name, () => {
      const out = assignCapacity({
        vms: c.vms,
        providers: new Map(c.providers.map((p) => [p.uuid, p])),
        candidates: c.candidates ?? everyone(c.vms, c.providers),
        excluded: new Set(c.excluded ?? []),
      });
      assert.deepEqual(out.unplaced.map((u) => u.vm.id), c.unplaced);
      assert.equal(out.fits, c.unplaced.length === 0);
      if (c.causes !== undefined) {
        assert.deepEqual(out.unplaced.map((u) => u.cause), c.causes);
      }
    });
  }
});

Deno.test("assignCapacity: the why names the short resource class", () => {
  const out = assignCapacity({
    vms: [vm("a", 6), vm("b", 6)],
    providers: new Map([["p", provider("p", 10)]]),
    candidates: new Map([["a", ["p"]], ["b", ["p"]]]),
    excluded: new Set(),
  });
  assert.deepEqual(out.unplaced[0]?.short, ["MEMORY_MB"]);
  assert.match(out.unplaced[0]?.why ?? "", /short of MEMORY_MB/);
});

Deno.test("assignCapacity: two hosts of a wave share one pool", () => {
  // Each host alone would fit into p's 10 MB; together they do not.
  const vms = [vm("a", 6, 1, "h1"), vm("b", 6, 1, "h2")];
  const providers = [provider("p", 10)];
  for (const one of vms) {
    assert.equal(
      assignCapacity({
        vms: [one],
        providers: new Map(providers.map((p) => [p.uuid, p])),
        candidates: everyone([one], providers),
        excluded: new Set(),
      }).fits,
      true,
    );
  }
  const both = assignCapacity({
    vms,
    providers: new Map(providers.map((p) => [p.uuid, p])),
    candidates: everyone(vms, providers),
    excluded: new Set(),
  });
  assert.equal(both.fits, false);
});

// --- property tests ---------------------------------------------------

const rcs = ["MEMORY_MB", "VCPU", "DISK_GB"] as const;

const arbInventory = fc.record({
  total: fc.integer({ min: 0, max: 64 }),
  reserved: fc.integer({ min: 0, max: 8 }),
  allocationRatio: fc.constantFrom(1, 1.5, 2, 4),
  minUnit: fc.integer({ min: 1, max: 2 }),
  maxUnit: fc.integer({ min: 1, max: 64 }),
  stepSize: fc.constantFrom(1, 1, 2),
});

const arbProvider = (uuid: string) =>
  fc.record({
    inventories: fc.record({
      MEMORY_MB: arbInventory,
      VCPU: arbInventory,
      DISK_GB: arbInventory,
    }),
    usages: fc.record({
      MEMORY_MB: fc.integer({ min: 0, max: 40 }),
      VCPU: fc.integer({ min: 0, max: 40 }),
      DISK_GB: fc.integer({ min: 0, max: 40 }),
    }),
  }).map((p): ProviderCapacity => ({ uuid, ...p }));

const arbWorld = fc.integer({ min: 1, max: 5 }).chain((np) =>
  fc.record({
    providers: fc.tuple(
      ...Array.from({ length: np }, (_, i) => arbProvider(`p${i}`)),
    ),
    vms: fc.array(
      fc.record({
        ram: fc.integer({ min: 1, max: 30 }),
        vcpu: fc.integer({ min: 1, max: 16 }),
        disk: fc.integer({ min: 0, max: 20 }),
        cands: fc.subarray(Array.from({ length: np }, (_, i) => `p${i}`)),
      }),
      { maxLength: 12 },
    ),
  })
).map(({ providers, vms }) => {
  const demands: VmDemand[] = vms.map((v, i) => ({
    id: `v${String(i).padStart(2, "0")}`,
    name: `v${i}`,
    host: "src",
    resources: { MEMORY_MB: v.ram, VCPU: v.vcpu, DISK_GB: v.disk },
    required: [],
    forbidden: [],
  }));
  return {
    vms: demands,
    providers: new Map(providers.map((p) => [p.uuid, p])),
    candidates: new Map(demands.map((d, i) => [d.id, vms[i]?.cands ?? []])),
    excluded: new Set<string>(),
  } satisfies AssignInput;
});

Deno.test("property: never over-assigns a provider", () => {
  fc.assert(fc.property(arbWorld, (input) => {
    const out = assignCapacity(input);
    for (const [uuid, p] of input.providers) {
      for (const rc of rcs) {
        const inventory = p.inventories[rc];
        if (inventory === undefined) continue;
        const assigned = input.vms.filter((v) => out.placed.get(v.id) === uuid)
          .reduce((s, v) => s + (v.resources[rc] ?? 0), 0);
        if (assigned === 0) continue;
        assert.ok(
          assigned <= freeCapacity(inventory, p.usages[rc] ?? 0),
          `${uuid} ${rc}: ${assigned} assigned`,
        );
      }
    }
    // Every VM is either placed on one of its candidates or reported.
    for (const v of input.vms) {
      const to = out.placed.get(v.id);
      const reported = out.unplaced.some((u) => u.vm.id === v.id);
      assert.notEqual(to === undefined, !reported);
      if (to !== undefined) assert.ok(input.candidates.get(v.id)?.includes(to));
    }
  }));
});

Deno.test("property: a VM that fits alone on an empty provider is placed", () => {
  fc.assert(fc.property(
    fc.integer({ min: 1, max: 1000 }),
    fc.integer({ min: 1, max: 64 }),
    fc.integer({ min: 0, max: 500 }),
    (ram, vcpu, slack) => {
      const p = provider("p", ram + slack, vcpu);
      const v = vm("a", ram, vcpu);
      const out = assignCapacity({
        vms: [v],
        providers: new Map([["p", p]]),
        candidates: new Map([["a", ["p"]]]),
        excluded: new Set(),
      });
      assert.equal(out.placed.get("a"), "p");
    },
  ));
});

Deno.test("property: monotone: adding a provider never loses a placement", () => {
  fc.assert(fc.property(arbWorld, arbProvider("zz"), (input, extra) => {
    const before = assignCapacity(input);
    const candidates = new Map(
      [...input.candidates].map(([id, c]) => [id, [...c, "zz"]]),
    );
    const after = assignCapacity({
      ...input,
      providers: new Map([...input.providers, ["zz", extra]]),
      candidates,
    });
    for (const id of before.placed.keys()) {
      assert.equal(after.placed.get(id), before.placed.get(id));
    }
    assert.ok(after.unplaced.length <= before.unplaced.length);
  }));
});

Deno.test("property: the input is not changed", () => {
  fc.assert(fc.property(arbWorld, (input) => {
    const snapshot = () =>
      JSON.stringify({ vms: input.vms, providers: [...input.providers] });
    const before = snapshot();
    assignCapacity(input);
    assert.equal(snapshot(), before);
  }));
});
