import assert from "node:assert/strict";
import { defineKind, kindPath, objectKey, parseKey } from "./kind.ts";
import { parseAddress } from "./address.ts";
import { TemporaryError } from "./errors.ts";

Deno.test("kind: descriptors are validated and name the bad value", () => {
  const ok = {
    group: "kvm.cloud.sap",
    version: "v1",
    plural: "evictions",
    kind: "Eviction",
    namespaced: false,
  };
  assert.equal(
    kindPath(defineKind(ok), { name: "n", subresource: "status" }),
    "/apis/kvm.cloud.sap/v1/evictions/n/status",
  );
  assert.equal(
    kindPath(defineKind(ok), { namespace: "ignored", name: "n" }),
    "/apis/kvm.cloud.sap/v1/evictions/n",
  );
  assert.throws(
    () => defineKind({ ...ok, plural: "Evictions" }),
    /plural must be a lowercase DNS label, got "Evictions"/,
  );
  assert.throws(
    () => defineKind({ ...ok, kind: "eviction" }),
    /kind must be CamelCase, got "eviction"/,
  );
  assert.throws(
    () => defineKind({ ...ok, group: "Bad_Group" }),
    /group must be a DNS subdomain, got "Bad_Group"/,
  );
});

Deno.test("kind: keys round-trip and bad keys are refused", () => {
  assert.deepEqual(
    parseKey(objectKey({ metadata: { name: "a", namespace: "ns" } })),
    { namespace: "ns", name: "a" },
  );
  assert.deepEqual(parseKey("a"), { namespace: undefined, name: "a" });
  assert.throws(() => parseKey("a/b/c"), /got "a\/b\/c"/);
  assert.throws(() => parseKey(""), /must not be empty/);
  assert.throws(() => objectKey({ metadata: {} }), /no metadata.name/);
});

Deno.test("address and error options are validated", () => {
  assert.deepEqual(parseAddress(":9443"), { hostname: "0.0.0.0", port: 9443 });
  assert.deepEqual(parseAddress("[::1]:80"), { hostname: "::1", port: 80 });
  assert.throws(() => parseAddress("9443"), /got "9443"/);
  assert.throws(() => parseAddress(":70000"), /got ":70000"/);
  assert.throws(() => new TemporaryError("x", { delayMs: -1 }), /got -1/);
});
