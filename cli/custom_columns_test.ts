import assert from "node:assert/strict";
import {
  customColumnCells,
  customColumnsTable,
  parseCustomColumns,
} from "./custom_columns.ts";
import { JsonPathError } from "./jsonpath.ts";

const A = {
  metadata: { name: "node042" },
  status: {
    migratedCount: 3,
    failed: [{ id: "vm1" }, { id: "vm2" }],
    conditions: [{ type: "Evicting", reason: "Running", message: "a\nb" }],
  },
};
const B = { metadata: { name: "n2" }, status: {} };

Deno.test("custom-columns: kubectl's cells, table", () => {
  const rows: [string, unknown, string[]][] = [
    ["NAME:.metadata.name", A, ["node042"]],
    ["NAME:metadata.name", A, ["node042"]],
    ["NAME:{.metadata.name}", A, ["node042"]],
    ["NAME:{metadata.name}", A, ["node042"]],
    ["M:.status.migratedCount", A, ["3"]],
    ["M:.status.migratedCount", B, ["<none>"]],
    ["F:.status.failed[*].id", A, ["vm1,vm2"]],
    [
      'S:.status.conditions[?(@.type=="Evicting")].reason,N:.metadata.name',
      A,
      ["Running", "node042"],
    ],
    ['MSG:.status.conditions[?(@.type=="Evicting")].message', A, ["a b"]],
  ];
  for (const [spec, object, want] of rows) {
    assert.deepEqual(
      customColumnCells(parseCustomColumns(spec), object),
      want,
      spec,
    );
  }
});

Deno.test("custom-columns: an aligned table with the headers as given", () => {
  assert.equal(
    customColumnsTable(
      parseCustomColumns("NAME:.metadata.name,Migrated:.status.migratedCount"),
      [A, B],
    ),
    "NAME      Migrated\nnode042   3\nn2        <none>",
  );
});

Deno.test("custom-columns: a bad spec is one line naming it", () => {
  const rows: [string, RegExp][] = [
    ["", /no custom columns given/],
    [
      "NAME",
      /unexpected custom-columns spec: NAME, expected <header>:<json-path-expr>/,
    ],
    ["NAME:.a..b", /recursive descent/],
  ];
  for (const [spec, want] of rows) {
    assert.throws(
      () => parseCustomColumns(spec),
      (e: Error) => e instanceof JsonPathError && want.test(e.message),
      spec,
    );
  }
});
