/**
 * The cluster-scoped kind the framework's controller unit tests run over
 * (a cache the test edits; no API server serves it).
 *
 * @module
 */
import { defineKind } from "../../framework/kind.ts";

/** The Thing kind (fwtest.example.com/v1, cluster-scoped). */
export const Things = defineKind({
  group: "fwtest.example.com",
  version: "v1",
  plural: "things",
  kind: "Thing",
  namespaced: false,
});
