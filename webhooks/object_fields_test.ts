import assert from "node:assert/strict";
import { isRecord } from "../limits/validation.ts";
import { isBeingDeleted, nameList, objectName } from "./object_fields.ts";

Deno.test("object fields: records, names, deletion", () => {
  assert.ok(isRecord({}) && !isRecord([]) && !isRecord(null) && !isRecord("x"));
  assert.equal(objectName({ metadata: { name: "default" } }), "default");
  assert.equal(objectName({ metadata: { name: 3 } }), undefined);
  assert.equal(objectName({ metadata: null }), undefined);
  assert.equal(objectName("x"), undefined);
  assert.ok(
    isBeingDeleted({ metadata: { deletionTimestamp: "2026-01-01T00:00:00Z" } }),
  );
  assert.ok(!isBeingDeleted({ metadata: { deletionTimestamp: null } }));
  assert.ok(!isBeingDeleted({ metadata: {} }));
  assert.ok(!isBeingDeleted(undefined));
  assert.ok(!isBeingDeleted({ metadata: "x" }));
  assert.ok(!isBeingDeleted({ metadata: { deletionTimestamp: "" } }));
});

Deno.test("nameList: quoted, escaped, shortened", () => {
  assert.equal(nameList([]), "");
  assert.equal(nameList(["a"]), '"a"');
  assert.equal(nameList(["a", "b\n"]), '"a", "b\\n"');
  assert.equal(nameList(["a", "b", "c", "d"], 2), '"a", "b" and 2 more');
});
