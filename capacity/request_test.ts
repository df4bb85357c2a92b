import { strict as assert } from "node:assert";
import fc from "fast-check";
import { type FlavorSpec, requestOfFlavor } from "./request.ts";

Deno.test("requestOfFlavor: table", async (t) => {
  const cases: {
    name: string;
    flavor: FlavorSpec;
    resources: Record<string, number>;
    required?: string[];
    forbidden?: string[];
  }[] = [
    {
      name: "plain flavor",
      flavor: { vcpus: 2, ramMb: 4096, disk: 20 },
      resources: { VCPU: 2, MEMORY_MB: 4096, DISK_GB: 20 },
    },
    {
      name: "ephemeral and swap (rounded up to GB) count as disk",
      flavor: { vcpus: 1, ramMb: 512, disk: 10, ephemeral: 5, swap: 1025 },
      resources: { VCPU: 1, MEMORY_MB: 512, DISK_GB: 17 },
    },
    {
      name: "no disk: no DISK_GB",
      flavor: { vcpus: 1, ramMb: 512 },
      resources: { VCPU: 1, MEMORY_MB: 512 },
    },
    {
      name: "dedicated CPUs ask for PCPU",
      flavor: {
        vcpus: 4,
        ramMb: 512,
        extraSpecs: { "hw:cpu_policy": "dedicated" },
      },
      resources: { PCPU: 4, MEMORY_MB: 512 },
    },
    {
      name: "resources: overrides and adds; 0 drops a class",
      flavor: {
        vcpus: 2,
        ramMb: 1024,
        disk: 20,
        extraSpecs: {
          "resources:DISK_GB": "0",
          "resources:CUSTOM_BAREMETAL_GOLD": "1",
          "resources:VCPU": "3",
        },
      },
      resources: { VCPU: 3, MEMORY_MB: 1024, CUSTOM_BAREMETAL_GOLD: 1 },
    },
    {
      name: "numbered groups add to the unnumbered one",
      flavor: {
        vcpus: 1,
        ramMb: 1024,
        extraSpecs: { "resources1:VGPU": "1", "resources:VGPU": "1" },
      },
      resources: { VCPU: 1, MEMORY_MB: 1024, VGPU: 2 },
    },
    {
      name: "required and forbidden traits",
      flavor: {
        vcpus: 1,
        ramMb: 1,
        extraSpecs: {
          "trait:HW_CPU_X86_AVX2": "required",
          "trait1:CUSTOM_B": "required",
          "trait:CUSTOM_NO": "forbidden",
          "hw:mem_page_size": "large",
        },
      },
      resources: { VCPU: 1, MEMORY_MB: 1 },
      required: ["CUSTOM_B", "HW_CPU_X86_AVX2"],
      forbidden: ["CUSTOM_NO"],
    },
  ];
  for (const c of cases) {
    await t.step(c.name, () => {
      const r = requestOfFlavor(c.flavor);
      assert.deepEqual(r.resources, c.resources);
      assert.deepEqual(r.required, c.required ?? []);
      assert.deepEqual(r.forbidden, c.forbidden ?? []);
    });
  }
});

Deno.test("requestOfFlavor: bad extra specs name the spec", () => {
  assert.throws(
    () =>
      requestOfFlavor({
        vcpus: 1,
        ramMb: 1,
        extraSpecs: { "resources:VGPU": "two" },
      }),
    /resources:VGPU=two: expected a non-negative integer/,
  );
  assert.throws(
    () =>
      requestOfFlavor({ vcpus: 1, ramMb: 1, extraSpecs: { "trait:X": "yes" } }),
    /trait:X=yes: expected "required" or "forbidden"/,
  );
});

Deno.test("property: RAM and vCPUs always asked for, never a zero amount", () => {
  fc.assert(fc.property(
    fc.integer({ min: 1, max: 1 << 20 }),
    fc.integer({ min: 1, max: 256 }),
    fc.integer({ min: 0, max: 1000 }),
    (ramMb, vcpus, disk) => {
      const r = requestOfFlavor({ vcpus, ramMb, disk });
      assert.equal(r.resources["MEMORY_MB"], ramMb);
      assert.equal(r.resources["VCPU"], vcpus);
      assert.ok(Object.values(r.resources).every((n) => n > 0));
    },
  ));
});
