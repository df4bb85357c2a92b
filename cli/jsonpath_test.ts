import assert from "node:assert/strict";
import fc from "fast-check";
import {
  executeJsonPath,
  findValues,
  JsonPathError,
  parseJsonPath,
} from "./jsonpath.ts";

const LIST = {
  apiVersion: "v1",
  kind: "List",
  items: [
    {
      metadata: { name: "node042", annotations: { "kvm.cloud.sap/x": "y" } },
      spec: { hypervisor: "node042", reason: "kernel" },
      status: {
        migratedCount: 3,
        conditions: [
          { type: "Preflight", reason: "Ok" },
          { type: "Evicting", reason: "Running", status: "True" },
        ],
      },
    },
    {
      metadata: { name: "node043" },
      spec: { hypervisor: "node043", reason: "rack 7" },
      status: {
        migratedCount: 0,
        conditions: [{ type: "Evicting", reason: "Succeeded" }],
      },
    },
  ],
};

Deno.test("executeJsonPath: the subset of kubectl's templates, table", () => {
  const rows: [string, string][] = [
    ["{.kind}", "List"],
    ["{$.kind}", "List"],
    ["{kind}", "List"],
    ["{.items[*].metadata.name}", "node042 node043"],
    ["{.items[0].metadata.name}", "node042"],
    ["{.items[-1].metadata.name}", "node043"],
    ["{.items[0:1].metadata.name}", "node042"],
    ["{.items[1:].spec.reason}", "rack 7"],
    ["{.items[*].status.migratedCount}", "3 0"],
    ["{.items[0]['metadata']['name']}", "node042"],
    ["{.items[0].metadata.annotations.kvm\\.cloud\\.sap/x}", "y"],
    ["{.items[0].metadata.annotations['kvm.cloud.sap/x']}", "y"],
    [
      '{.items[*].status.conditions[?(@.type=="Evicting")].reason}',
      "Running Succeeded",
    ],
    ["{.items[?(@.status.migratedCount>0)].metadata.name}", "node042"],
    ['{.items[?(@.spec.reason!="kernel")].metadata.name}', "node043"],
    ["{.items[?(@.status)].metadata.name}", "node042 node043"],
    ["{.items[1].spec}", '{"hypervisor":"node043","reason":"rack 7"}'],
    ["{.items[*].metadata.missing}", ""],
    ["{.nothing.at.all}", ""],
    [
      '{range .items[*]}{.metadata.name}{"\\t"}{.spec.reason}{"\\n"}{end}',
      "node042\tkernel\nnode043\track 7\n",
    ],
    [
      "names: {range .items[*]}[{.metadata.name}]{end} done",
      "names: [node042][node043] done",
    ],
    [
      "{range .items[*]}{range .status.conditions[*]}{.type},{end};{end}",
      "Preflight,Evicting,;Evicting,;",
    ],
    ["plain text", "plain text"],
    ['{"a \\"quoted\\" literal"}', 'a "quoted" literal'],
  ];
  for (const [template, want] of rows) {
    assert.equal(
      executeJsonPath(parseJsonPath(template), LIST),
      want,
      template,
    );
  }
});

Deno.test("parseJsonPath: what the subset does not read is one clear line", () => {
  const rows: [string, RegExp][] = [
    ["{..name}", /recursive descent "\.\." is not supported/],
    [
      "{.items[0,1]}",
      /"\[0,1\]" is not supported .*expected \[n\], \[a:b\], \[\*\]/,
    ],
    ["{.items[0]", /unclosed "\{"/],
    ["{.items[0}", /unclosed "\["/],
    ["{range .items[*]}{.a}", /\{range\} without \{end\}/],
    ["{end}", /\{end\} without \{range\}/],
    ["{}", /empty \{\}/],
    ["{len(.items)}", /function "len\(\.items\)" is not supported/],
    ["{.a .b}", /"\.b" is not supported .*unions and several paths/],
    ["{.items[?(@.a ~ 1)]}", /expected ==, !=, <, <=, > or >=/],
  ];
  for (const [template, want] of rows) {
    assert.throws(
      () => parseJsonPath(template),
      (e: Error) =>
        e instanceof JsonPathError && want.test(e.message) &&
        !e.message.includes("\n"),
      template,
    );
  }
});

Deno.test("executeJsonPath: an index out of bounds is an error, as kubectl's", () => {
  assert.throws(
    () => executeJsonPath(parseJsonPath("{.items[5].metadata.name}"), LIST),
    /array index out of bounds: index 5, length 2/,
  );
  assert.throws(
    () => executeJsonPath(parseJsonPath("{.kind[0]}"), LIST),
    /string is not an array/,
  );
});

Deno.test("findValues: [*] names every item, [n] the one (property)", () => {
  fc.assert(
    fc.property(
      fc.array(fc.string({ minLength: 1 }), { minLength: 1, maxLength: 8 }),
      fc.nat(),
      (names, k) => {
        const data = { items: names.map((name) => ({ metadata: { name } })) };
        assert.deepEqual(
          findValues(parseJsonPath("{.items[*].metadata.name}"), data),
          names,
        );
        const i = k % names.length;
        assert.deepEqual(
          findValues(parseJsonPath(`{.items[${i}].metadata.name}`), data),
          [names[i]],
        );
        assert.deepEqual(
          findValues(
            parseJsonPath(`{.items[-${names.length - i}].metadata.name}`),
            data,
          ),
          [names[i]],
        );
      },
    ),
  );
});
