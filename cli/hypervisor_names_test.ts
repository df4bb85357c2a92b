import assert from "node:assert/strict";
import { unknownHypervisorsMessage } from "./hypervisor_names.ts";

Deno.test("unknownHypervisorsMessage: each unknown name with the closest existing ones, one line", () => {
  const existing = ["node042", "node043", "node142", "compute-7"];
  const tail =
    ": nothing created; check the names (kubectl get hypervisors), or pass --allow-unknown to drain them anyway";
  const rows: [string[], string[], string][] = [
    [
      ["nod042"],
      existing,
      `no Hypervisor named "nod042" (did you mean node042?)`,
    ],
    [
      ["node044"],
      existing,
      `no Hypervisor named "node044" (did you mean node042 or node043?)`,
    ],
    [
      ["nod042", "gpu-host-17"],
      existing,
      `no Hypervisor named "nod042" (did you mean node042?), "gpu-host-17" (no Hypervisor has a similar name)`,
    ],
    [
      ["n1"],
      ["n2", "n3", "n4", "n5"],
      `no Hypervisor named "n1" (did you mean n2, n3 or n4?)`,
    ],
    [
      ["nod042"],
      [],
      `no Hypervisor named "nod042" (no Hypervisor has a similar name)`,
    ],
  ];
  for (const [unknown, names, head] of rows) {
    const line = unknownHypervisorsMessage(unknown, names);
    assert.equal(line, head + tail);
    assert.doesNotMatch(line, /\n/);
  }
});
