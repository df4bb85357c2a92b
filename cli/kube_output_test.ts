import assert from "node:assert/strict";
import { asPrinted, kubeList, parseOutput, renderKube } from "./kube_output.ts";
import { UsageError } from "./usage.ts";

Deno.test("kubeList: a v1 List of the objects, without managedFields", () => {
  const o = {
    apiVersion: "kvm.cloud.sap/v1",
    kind: "Eviction",
    metadata: { name: "a", managedFields: [{ manager: "x" }] },
  };
  assert.deepEqual(kubeList([o]), {
    apiVersion: "v1",
    kind: "List",
    metadata: { resourceVersion: "" },
    items: [{
      apiVersion: "kvm.cloud.sap/v1",
      kind: "Eviction",
      metadata: { name: "a" },
    }],
  });
  assert.equal(asPrinted("x"), "x");
});

Deno.test("renderKube: keys sorted; JSON by four spaces, YAML lists unindented", () => {
  const value = { kind: "List", apiVersion: "v1", items: [{ b: 1, a: 2 }] };
  assert.equal(
    renderKube(value, "json"),
    '{\n    "apiVersion": "v1",\n    "items": [\n        {\n            "a": 2,\n            "b": 1\n        }\n    ],\n    "kind": "List"\n}',
  );
  assert.equal(
    renderKube(value, "yaml"),
    "apiVersion: v1\nitems:\n- a: 2\n  b: 1\nkind: List",
  );
});

Deno.test("parseOutput: kubectl's -o values, a bad one named", () => {
  for (const v of ["table", "wide", "name", "json", "yaml", "summary-json"]) {
    assert.equal(parseOutput(v).kind, v);
  }
  assert.equal(parseOutput(undefined).kind, "table");
  assert.equal(
    parseOutput("jsonpath={.items[*].metadata.name}").kind,
    "jsonpath",
  );
  assert.equal(
    parseOutput("custom-columns=N:.metadata.name").kind,
    "custom-columns",
  );
  const rows: [string, RegExp][] = [
    [
      "xml",
      /^--output "xml" is not valid: expected table, wide, name, json, yaml, jsonpath=TEMPLATE, custom-columns=SPEC, summary-json or summary-yaml$/,
    ],
    ["jsonpath", /^--output "jsonpath" is not valid: expected table/],
    [
      "go-template={{.kind}}",
      /^--output "go-template=\{\{\.kind\}\}" is not valid/,
    ],
    [
      "jsonpath={..name}",
      /^--output "jsonpath=\{\.\.name\}" is not valid: recursive descent/,
    ],
    [
      "custom-columns=NAME",
      /is not valid: unexpected custom-columns spec: NAME/,
    ],
  ];
  for (const [v, want] of rows) {
    assert.throws(
      () => parseOutput(v),
      (e: Error) => e instanceof UsageError && want.test(e.message),
      v,
    );
  }
});
