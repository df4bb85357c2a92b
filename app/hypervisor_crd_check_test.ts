import assert from "node:assert/strict";
import { parse } from "yaml";
import type { CrdLike } from "../framework/crd_pruning.ts";
import {
  prunedHypervisorFields,
  prunedMessage,
} from "./hypervisor_crd_check.ts";

const ROOT = new URL("../", import.meta.url);

async function crd(path: string): Promise<CrdLike> {
  return parse(await Deno.readTextFile(new URL(path, ROOT))) as CrdLike;
}

Deno.test("the upstream operator's Hypervisor CRD prunes status.lastDrain; evictor's keeps everything it writes", async () => {
  const upstream = await crd(
    "tests/testdata/upstream/kvm.cloud.sap_hypervisors.yaml",
  );
  assert.deepEqual(prunedHypervisorFields(upstream), ["status.lastDrain"]);
  const ours = await crd("manifests/crds/kvm.cloud.sap_hypervisors.yaml");
  assert.deepEqual(prunedHypervisorFields(ours), []);
  // the upstream one with status open (as ours) keeps it too
  const opened = structuredClone(upstream);
  const status = opened.spec?.versions?.[0]?.schema?.openAPIV3Schema
    ?.properties?.["status"];
  assert.ok(status !== undefined);
  status["x-kubernetes-preserve-unknown-fields"] = true;
  assert.deepEqual(prunedHypervisorFields(opened), []);
  assert.match(
    prunedMessage(["status.lastDrain"]),
    /prunes status\.lastDrain .*annotation evictor\.kvm\.cloud\.sap\/last-drain/,
  );
});
