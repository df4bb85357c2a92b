import assert from "node:assert/strict";
import {
  prunedPaths,
  servedSchema,
  type StructuralSchema,
} from "./crd_pruning.ts";

Deno.test("prunedPaths: fields the schema neither lists nor keeps, as the API server prunes them", () => {
  const status: StructuralSchema = {
    properties: {
      id: {},
      list: { items: { properties: { a: {} } } },
      labels: { additionalProperties: {} },
      free: { "x-kubernetes-preserve-unknown-fields": true },
    },
  };
  const schema: StructuralSchema = { properties: { status } };
  const table: [unknown, string[]][] = [
    [{ status: { id: "1" } }, []],
    [{ status: { id: "1", extra: { deep: 1 } } }, ["status.extra"]],
    [{ status: { list: [{ a: 1 }, { a: 2, b: 3 }] } }, ["status.list[1].b"]],
    [{ status: { labels: { any: "x", other: "y" } } }, []],
    [{ status: { free: { anything: { at: ["all"] } } } }, []],
    [{ other: 1, status: { x: 1, y: 2 } }, ["other", "status.x", "status.y"]],
    [{ status: null }, []],
  ];
  for (const [value, want] of table) {
    assert.deepEqual(prunedPaths(schema, value), want, JSON.stringify(value));
  }
  // status keeping unknown fields keeps them all
  const kept = {
    properties: {
      status: { "x-kubernetes-preserve-unknown-fields": true, properties: {} },
    },
  };
  assert.deepEqual(prunedPaths(kept, { status: { a: { b: 1 } } }), []);
  // no schema: nothing to say
  assert.deepEqual(prunedPaths(undefined, { a: 1 }), []);
});

Deno.test("servedSchema: the schema of a served version only", () => {
  const schema = { properties: {} };
  const crd = {
    spec: {
      versions: [
        { name: "v1", served: true, schema: { openAPIV3Schema: schema } },
        { name: "v2", served: false, schema: { openAPIV3Schema: schema } },
      ],
    },
  };
  assert.equal(servedSchema(crd, "v1"), schema);
  assert.equal(servedSchema(crd, "v2"), undefined);
  assert.equal(servedSchema(crd, "v3"), undefined);
  assert.equal(servedSchema({}, "v1"), undefined);
});
