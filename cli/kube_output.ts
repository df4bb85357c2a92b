/**
 * Objects printed as kubectl prints them: `-o json` (keys sorted, four
 * spaces), `-o yaml` (keys sorted, lists not indented), several objects
 * as a `List`, and the `-o` values the plugin's `status` takes
 * (`jsonpath=...`, `custom-columns=...` among them).
 *
 * @module
 */
import { stringify as toYaml } from "yaml";
import { type CustomColumn, parseCustomColumns } from "./custom_columns.ts";
import {
  JsonPathError,
  type JsonPathTemplate,
  parseJsonPath,
} from "./jsonpath.ts";
import { UsageError } from "./usage.ts";

/** An `-o` value, parsed. */
export type OutputSpec =
  | { kind: "table" | "wide" | "name" | "json" | "yaml" }
  | { kind: "summary-json" | "summary-yaml" }
  | { kind: "jsonpath"; template: JsonPathTemplate }
  | { kind: "custom-columns"; columns: CustomColumn[] };

const PLAIN = [
  "table",
  "wide",
  "name",
  "json",
  "yaml",
  "summary-json",
  "summary-yaml",
] as const;

/**
 * Parses the `-o` value of `status`: table, wide, name, json, yaml,
 * summary-json, summary-yaml, `jsonpath=TEMPLATE` or
 * `custom-columns=SPEC`; anything else is a usage error naming it.
 *
 * @example
 * ```ts
 * import { parseOutput } from "./kube_output.ts";
 * console.assert(parseOutput("jsonpath={.items[*].metadata.name}").kind === "jsonpath");
 * ```
 */
export function parseOutput(value: string | undefined): OutputSpec {
  const v = value ?? "table";
  const plain = PLAIN.find((p) => p === v);
  if (plain === "summary-json" || plain === "summary-yaml") {
    return { kind: plain };
  }
  if (plain !== undefined) return { kind: plain };
  const eq = v.indexOf("=");
  const [kind, arg] = eq < 0 ? [v, ""] : [v.slice(0, eq), v.slice(eq + 1)];
  try {
    if (kind === "jsonpath" && eq >= 0) {
      return { kind: "jsonpath", template: parseJsonPath(arg) };
    }
    if (kind === "custom-columns" && eq >= 0) {
      return { kind: "custom-columns", columns: parseCustomColumns(arg) };
    }
  } catch (e) {
    if (e instanceof JsonPathError) {
      throw new UsageError(
        `--output "${v}" is not valid: ${e.message}`,
        "status",
      );
    }
    throw e;
  }
  throw new UsageError(
    `--output "${v}" is not valid: expected table, wide, name, json, yaml, jsonpath=TEMPLATE, custom-columns=SPEC, summary-json or summary-yaml`,
    "status",
  );
}

/** `value` with every object's keys sorted, as Go's JSON of a map has them. */
function sorted(value: unknown): unknown {
  if (Array.isArray(value)) return value.map(sorted);
  if (typeof value === "object" && value !== null) {
    return Object.fromEntries(
      Object.keys(value).sort().map((k) => [
        k,
        sorted((value as Record<string, unknown>)[k]),
      ]),
    );
  }
  return value;
}

/**
 * An object as the API server sent it, less `metadata.managedFields`
 * (kubectl leaves them out unless `--show-managed-fields`).
 *
 * @example
 * ```ts
 * import { asPrinted } from "./kube_output.ts";
 * const o = asPrinted({ metadata: { name: "a", managedFields: [] } });
 * console.assert(JSON.stringify(o) === '{"metadata":{"name":"a"}}');
 * ```
 */
export function asPrinted(object: unknown): unknown {
  if (typeof object !== "object" || object === null) return object;
  const o = object as { metadata?: Record<string, unknown> };
  if (o.metadata === undefined || !("managedFields" in o.metadata)) {
    return object;
  }
  const { managedFields: _, ...metadata } = o.metadata;
  return { ...o, metadata };
}

/**
 * The `List` kubectl prints for several objects.
 *
 * @example
 * ```ts
 * import { kubeList } from "./kube_output.ts";
 * console.assert(kubeList([]).kind === "List");
 * ```
 */
export function kubeList(items: readonly unknown[]): {
  apiVersion: "v1";
  kind: "List";
  metadata: { resourceVersion: string };
  items: unknown[];
} {
  return {
    apiVersion: "v1",
    kind: "List",
    metadata: { resourceVersion: "" },
    items: items.map(asPrinted),
  };
}

/**
 * JSON or YAML as kubectl prints objects: keys sorted; JSON indented by
 * four spaces; YAML with list items at their key's indentation.
 *
 * @example
 * ```ts
 * import { renderKube } from "./kube_output.ts";
 * console.assert(renderKube({ b: 1, a: [2] }, "yaml") === "a:\n- 2\nb: 1");
 * ```
 */
export function renderKube(value: unknown, format: "json" | "yaml"): string {
  return format === "json"
    ? JSON.stringify(sorted(value), null, 4)
    : toYaml(sorted(value), { indentSeq: false }).trimEnd();
}
