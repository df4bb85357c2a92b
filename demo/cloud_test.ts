import assert from "node:assert/strict";
import { CLOUDS, parseCloud } from "./cloud.ts";

Deno.test("parseCloud: each cloud, and a bad value named with the expected ones", () => {
  for (const c of CLOUDS) assert.equal(parseCloud(c), c);
  for (const bad of ["", "aws", "OpenStack", "simulator "]) {
    assert.throws(
      () => parseCloud(bad),
      (e: Error) =>
        e instanceof RangeError &&
        e.message ===
          `--cloud: got "${bad}"; expected one of simulator, openstack`,
    );
  }
});
