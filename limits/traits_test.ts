import assert from "node:assert/strict";
import {
  isKnownTraitNamespace,
  isTraitName,
  STANDARD_TRAIT_NAMESPACES,
  traitKey,
} from "./traits.ts";

Deno.test("isTraitName: placement syntax", () => {
  for (
    const ok of ["CUSTOM_A", "HW_CPU_X86_AVX2", "A", "_", "9", "X".repeat(255)]
  ) {
    assert.ok(isTraitName(ok), ok);
  }
  for (
    const bad of [
      "",
      "custom_a",
      "CUSTOM-A",
      "CUSTOM A",
      "CUSTOM_Ä",
      "X".repeat(256),
      3,
      null,
      undefined,
    ]
  ) {
    assert.ok(!isTraitName(bad), String(bad));
  }
});

Deno.test("isKnownTraitNamespace: CUSTOM_ and the os-traits namespaces", () => {
  assert.deepEqual(STANDARD_TRAIT_NAMESPACES, [
    "COMPUTE_",
    "HW_",
    "MISC_",
    "OWNER_",
    "STORAGE_",
  ]);
  for (
    const ok of [
      "CUSTOM_X",
      "COMPUTE_STATUS_DISABLED",
      "HW_NIC_SRIOV",
      "MISC_SHARES_VIA_AGGREGATE",
      "OWNER_NOVA",
      "STORAGE_DISK_SSD",
    ]
  ) {
    assert.ok(isKnownTraitNamespace(ok), ok);
  }
  for (const bad of ["CUSTOM_", "HW_", "HANA", "NET_X", "HWX"]) {
    assert.ok(!isKnownTraitNamespace(bad), bad);
  }
});

Deno.test("traitKey: equal for names differing only in case", () => {
  assert.equal(traitKey("custom_a"), traitKey("CUSTOM_A"));
  assert.notEqual(traitKey("CUSTOM_A"), traitKey("CUSTOM_B"));
});
