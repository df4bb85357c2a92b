/**
 * What the API server would prune of an object written to a custom
 * resource: every field its structural schema neither lists nor keeps
 * (`x-kubernetes-preserve-unknown-fields`, `additionalProperties`). The API
 * server drops such fields without an error, so a writer that depends on
 * them has to look at the installed schema to know.
 *
 * @module
 */

/** The part of an OpenAPI v3 structural schema that pruning reads. */
export interface StructuralSchema {
  /** Known fields of an object. */
  properties?: Record<string, StructuralSchema> | undefined;
  /** Values of a map (an object whose keys are not listed). */
  additionalProperties?: StructuralSchema | boolean | undefined;
  /** Elements of an array. */
  items?: StructuralSchema | undefined;
  /** Unknown fields below this node are kept. */
  "x-kubernetes-preserve-unknown-fields"?: boolean | undefined;
}

/**
 * The paths of `value`'s fields that `schema` prunes (`status.lastDrain`,
 * `spec.items[0].x`), in document order; empty when all are kept. Below a
 * pruned field nothing more is listed.
 *
 * @example
 * ```ts
 * import { prunedPaths } from "./crd_pruning.ts";
 * const schema = { properties: { status: { type: "object", properties: { id: {} } } } };
 * console.log(prunedPaths(schema, { status: { id: "1", lastDrain: { migrated: 3 } } }));
 * // [ "status.lastDrain" ]
 * ```
 */
export function prunedPaths(
  schema: StructuralSchema | undefined,
  value: unknown,
  path = "",
): string[] {
  if (schema === undefined) return [];
  if (Array.isArray(value)) {
    return value.flatMap((v, i) =>
      prunedPaths(schema.items, v, `${path}[${i}]`)
    );
  }
  if (typeof value !== "object" || value === null) return [];
  const out: string[] = [];
  for (const [key, v] of Object.entries(value)) {
    const at = path === "" ? key : `${path}.${key}`;
    const known = schema.properties?.[key];
    if (known !== undefined) {
      out.push(...prunedPaths(known, v, at));
    } else if (typeof schema.additionalProperties === "object") {
      out.push(...prunedPaths(schema.additionalProperties, v, at));
    } else if (
      schema.additionalProperties !== true &&
      schema["x-kubernetes-preserve-unknown-fields"] !== true
    ) {
      out.push(at);
    }
  }
  return out;
}

/** A CustomResourceDefinition as far as {@linkcode servedSchema} reads it. */
export interface CrdLike {
  spec?: {
    versions?: {
      name: string;
      served?: boolean;
      schema?: { openAPIV3Schema?: StructuralSchema };
    }[];
  };
}

/**
 * The schema of `version` of a CRD when that version is served; undefined
 * otherwise.
 *
 * @example
 * ```ts
 * import { servedSchema } from "./crd_pruning.ts";
 * const crd = { spec: { versions: [{ name: "v1", served: true, schema: { openAPIV3Schema: { properties: {} } } }] } };
 * console.assert(servedSchema(crd, "v1") !== undefined && servedSchema(crd, "v2") === undefined);
 * ```
 */
export function servedSchema(
  crd: CrdLike,
  version: string,
): StructuralSchema | undefined {
  const v = crd.spec?.versions?.find((x) => x.name === version);
  return v?.served === true ? v.schema?.openAPIV3Schema : undefined;
}
