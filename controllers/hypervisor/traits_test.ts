import assert from "node:assert/strict";
import fc from "fast-check";
import {
  formatManagedTraits,
  parseManagedTraits,
  planTraits,
} from "./traits.ts";

Deno.test("planTraits: table", () => {
  const rows: Array<{
    name: string;
    current: string[];
    desired: string[];
    managed: string[];
    add: string[];
    remove: string[];
    next: string[];
    managedAfter: string[];
  }> = [
    {
      name: "nothing to do",
      current: ["HW_CPU_X86_AVX"],
      desired: [],
      managed: [],
      add: [],
      remove: [],
      next: ["HW_CPU_X86_AVX"],
      managedAfter: [],
    },
    {
      name: "adds a missing trait and claims it",
      current: ["HW_CPU_X86_AVX"],
      desired: ["CUSTOM_A"],
      managed: [],
      add: ["CUSTOM_A"],
      remove: [],
      next: ["CUSTOM_A", "HW_CPU_X86_AVX"],
      managedAfter: ["CUSTOM_A"],
    },
    {
      name: "removes a trait it added once unlisted",
      current: ["CUSTOM_A", "CUSTOM_B"],
      desired: ["CUSTOM_B"],
      managed: ["CUSTOM_A", "CUSTOM_B"],
      add: [],
      remove: ["CUSTOM_A"],
      next: ["CUSTOM_B"],
      managedAfter: ["CUSTOM_B"],
    },
    {
      name: "never removes a CUSTOM_ trait someone else set",
      current: ["CUSTOM_THEIRS"],
      desired: [],
      managed: [],
      add: [],
      remove: [],
      next: ["CUSTOM_THEIRS"],
      managedAfter: [],
    },
    {
      name: "a wanted trait someone else set stays theirs",
      current: ["CUSTOM_SHARED"],
      desired: ["CUSTOM_SHARED"],
      managed: [],
      add: [],
      remove: [],
      next: ["CUSTOM_SHARED"],
      managedAfter: [],
    },
    {
      name: "a managed trait someone removed is added again",
      current: [],
      desired: ["CUSTOM_A"],
      managed: ["CUSTOM_A"],
      add: ["CUSTOM_A"],
      remove: [],
      next: ["CUSTOM_A"],
      managedAfter: ["CUSTOM_A"],
    },
    {
      name: "a managed trait already gone is simply forgotten",
      current: [],
      desired: [],
      managed: ["CUSTOM_A"],
      add: [],
      remove: [],
      next: [],
      managedAfter: [],
    },
    {
      name: "standard traits in the annotation are never managed",
      current: ["COMPUTE_STATUS_DISABLED"],
      desired: [],
      managed: ["COMPUTE_STATUS_DISABLED"],
      add: [],
      remove: [],
      next: ["COMPUTE_STATUS_DISABLED"],
      managedAfter: [],
    },
  ];
  for (const r of rows) {
    const p = planTraits(r.current, r.desired, r.managed);
    assert.deepEqual(p.add, r.add, `${r.name}: add`);
    assert.deepEqual(p.remove, r.remove, `${r.name}: remove`);
    assert.deepEqual(p.next, r.next, `${r.name}: next`);
    assert.deepEqual(p.managed, r.managedAfter, `${r.name}: managed`);
  }
});

const customTrait = fc.constantFrom(
  "CUSTOM_A",
  "CUSTOM_B",
  "CUSTOM_C",
  "CUSTOM_D",
);
const anyTrait = fc.oneof(
  customTrait,
  fc.constantFrom("HW_CPU_X86_AVX", "COMPUTE_STATUS_DISABLED"),
);
const traitSet = (t: fc.Arbitrary<string>) =>
  fc.uniqueArray(t, { maxLength: 6 });

Deno.test("planTraits: properties", () => {
  fc.assert(fc.property(
    traitSet(anyTrait),
    traitSet(customTrait),
    traitSet(anyTrait),
    (current, desired, managed) => {
      const p = planTraits(current, desired, managed);
      const next = new Set(p.next);
      // every wanted trait is there afterwards
      for (const t of desired) assert.ok(next.has(t), `${t} wanted`);
      // a trait is only removed if evictor manages it, it is custom and unwanted
      for (const t of current) {
        if (!next.has(t)) {
          assert.ok(managed.includes(t) && t.startsWith("CUSTOM_"));
          assert.ok(!desired.includes(t));
        }
      }
      // nothing appears that is not wanted
      for (const t of p.next) {
        assert.ok(current.includes(t) || desired.includes(t));
      }
      // evictor manages only wanted traits it added or managed before
      for (const t of p.managed) {
        assert.ok(desired.includes(t));
        assert.ok(managed.includes(t) || !current.includes(t));
      }
      // applying the plan again changes nothing
      const again = planTraits(p.next, desired, p.managed);
      assert.deepEqual(again.add, []);
      assert.deepEqual(again.remove, []);
      assert.deepEqual(again.next, p.next);
    },
  ));
});

Deno.test("managed traits annotation: parse and format round-trip; bad entries named", () => {
  assert.deepEqual(parseManagedTraits(undefined), { managed: [], invalid: [] });
  assert.deepEqual(parseManagedTraits(" CUSTOM_B , CUSTOM_A,,x y"), {
    managed: ["CUSTOM_A", "CUSTOM_B"],
    invalid: ["x y"],
  });
  fc.assert(fc.property(traitSet(customTrait), (traits) => {
    assert.deepEqual(
      parseManagedTraits(formatManagedTraits(traits)).managed,
      [...traits].sort(),
    );
  }));
});
