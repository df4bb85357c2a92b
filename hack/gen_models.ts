/**
 * Generates `models/` from the OpenAPI v3 schemas of the CRDs under
 * `manifests/crds/`: one file per kind with zod schemas and the TypeScript
 * types inferred from them. Every schema is declared with its zod type
 * written out (`z.ZodObject<{ ... }>`), so that the models can be part of
 * the package's public surface (mod.ts) without slow types: what
 * `z.infer` gives is the same as without the annotation.
 *
 * Usage: `deno task gen` writes the files; `--check` only compares and exits
 * 1 when `models/` is stale.
 *
 * Why our own converter: the maintained JSON-Schema-to-zod converters emit
 * zod 3 code and know neither Kubernetes' extensions
 * (x-kubernetes-int-or-string, x-kubernetes-preserve-unknown-fields,
 * list-map keys) nor CEL rules; the subset a CRD may use is small.
 *
 * @module
 */
import { parse as parseYaml } from "yaml";
import { celToJs } from "./cel_to_js.ts";

const ROOT = new URL("../", import.meta.url);
const CRD_DIR = new URL("manifests/crds/", ROOT);
const OUT_DIR = new URL("models/", ROOT);

/** The part of an OpenAPI v3 schema that CRDs use. */
export interface JsonSchema {
  type?: string;
  description?: string;
  properties?: Record<string, JsonSchema>;
  required?: string[];
  items?: JsonSchema;
  enum?: unknown[];
  minimum?: number;
  maximum?: number;
  minLength?: number;
  maxLength?: number;
  maxItems?: number;
  pattern?: string;
  format?: string;
  default?: unknown;
  "x-kubernetes-int-or-string"?: boolean;
  "x-kubernetes-preserve-unknown-fields"?: boolean;
  "x-kubernetes-list-type"?: string;
  "x-kubernetes-list-map-keys"?: string[];
  "x-kubernetes-validations"?: { rule: string; message?: string }[];
}

interface Crd {
  metadata: { name: string };
  spec: {
    group: string;
    names: { kind: string };
    versions: {
      name: string;
      schema: { openAPIV3Schema: JsonSchema };
      additionalPrinterColumns?: PrinterColumn[];
    }[];
  };
}

/** One of a CRD version's `additionalPrinterColumns`. */
interface PrinterColumn {
  name: string;
  type: string;
  jsonPath: string;
  priority?: number;
  description?: string;
}

/** A zod expression and its zod type, written out. */
interface Zod {
  expr: string;
  type: string;
}

/** Collects hoisted named schemas while converting one kind. */
class Emitter {
  readonly decls: string[] = [];

  /** Converts `schema` to a zod expression; objects get their own const. */
  convert(schema: JsonSchema, name: string, path: string): Zod {
    const base = this.#base(schema, name, path);
    if (schema.default === undefined) return base;
    return {
      expr: `${base.expr}.default(${JSON.stringify(schema.default)})`,
      type: `z.ZodDefault<${base.type}>`,
    };
  }

  #base(schema: JsonSchema, name: string, path: string): Zod {
    if (schema["x-kubernetes-int-or-string"]) {
      return {
        expr: "z.union([z.number().int(), z.string()])",
        type: "z.ZodUnion<readonly [z.ZodNumber, z.ZodString]>",
      };
    }
    const validations = (schema["x-kubernetes-validations"] ?? [])
      .map((v) => this.#refinement(v.rule, v.message, path))
      .join("");
    switch (schema.type) {
      case "object":
        return this.#object(schema, name, path, validations);
      case "array": {
        const items = this.convert(
          schema.items ?? {},
          `${name}Item`,
          `${path}[]`,
        );
        let expr = `z.array(${items.expr})`;
        if (schema.maxItems !== undefined) expr += `.max(${schema.maxItems})`;
        const keys = schema["x-kubernetes-list-map-keys"];
        if (schema["x-kubernetes-list-type"] === "map" && keys) {
          expr += `.superRefine(uniqueBy(${JSON.stringify(keys)}))`;
        } else if (schema["x-kubernetes-list-type"] === "set") {
          expr += `.superRefine(uniqueBy([]))`;
        }
        return { expr: expr + validations, type: `z.ZodArray<${items.type}>` };
      }
      case "string": {
        if (schema.enum) {
          return {
            expr: `z.enum(${JSON.stringify(schema.enum)})${validations}`,
            type: `z.ZodEnum<{ ${
              schema.enum.map((v) =>
                `${JSON.stringify(v)}: ${JSON.stringify(v)}`
              )
                .join("; ")
            } }>`,
          };
        }
        let expr = schema.format === "date-time"
          ? "z.iso.datetime({ offset: true })"
          : "z.string()";
        if (schema.minLength !== undefined) {
          expr += `.min(${schema.minLength})`;
        }
        if (schema.maxLength !== undefined) {
          expr += `.max(${schema.maxLength})`;
        }
        if (schema.pattern !== undefined) {
          expr += `.regex(new RegExp(${JSON.stringify(schema.pattern)}))`;
        }
        return {
          expr: expr + validations,
          type: schema.format === "date-time"
            ? "z.ZodISODateTime"
            : "z.ZodString",
        };
      }
      case "integer":
      case "number": {
        let expr = schema.type === "integer"
          ? "z.number().int()"
          : "z.number()";
        if (schema.minimum !== undefined) expr += `.min(${schema.minimum})`;
        if (schema.maximum !== undefined) expr += `.max(${schema.maximum})`;
        return { expr: expr + validations, type: "z.ZodNumber" };
      }
      case "boolean":
        return { expr: "z.boolean()" + validations, type: "z.ZodBoolean" };
      case undefined:
        if (schema["x-kubernetes-preserve-unknown-fields"]) {
          return { expr: "z.unknown()", type: "z.ZodUnknown" };
        }
        throw new TypeError(
          `schema at ${path} has no type: expected one of object, array, string, integer, number, boolean`,
        );
      default:
        throw new TypeError(
          `schema at ${path} has type "${schema.type}": expected one of object, array, string, integer, number, boolean`,
        );
    }
  }

  #object(
    schema: JsonSchema,
    name: string,
    path: string,
    validations: string,
  ): Zod {
    const preserve = schema["x-kubernetes-preserve-unknown-fields"] === true;
    if (path.endsWith(".metadata") && path.split(".").length === 2) {
      return { expr: "ObjectMetaSchema", type: "typeof ObjectMetaSchema" };
    }
    if (!schema.properties) {
      return preserve
        ? {
          expr: "z.record(z.string(), z.unknown())",
          type: "z.ZodRecord<z.ZodString, z.ZodUnknown>",
        }
        : {
          expr: "z.object({})",
          type: "z.ZodObject<Record<never, never>, z.core.$strip>",
        };
    }
    const required = new Set(schema.required ?? []);
    const fields: string[] = [];
    const types: string[] = [];
    for (const [key, child] of Object.entries(schema.properties)) {
      const childName = name + pascal(key);
      let { expr, type } = this.convert(child, childName, `${path}.${key}`);
      if (!required.has(key) && child.default === undefined) {
        expr += ".optional()";
        type = `z.ZodOptional<${type}>`;
      }
      fields.push(
        `${doc(child.description)}  ${JSON.stringify(key)}: ${expr},`,
      );
      types.push(`  ${JSON.stringify(key)}: ${type};`);
    }
    const ctor = preserve ? "z.looseObject" : "z.object";
    const mode = preserve ? "z.core.$loose" : "z.core.$strip";
    const constName = `${name}Schema`;
    const description = schema.description ??
      `The \`${path.replace(/^[A-Za-z]+\.?/, ".")}\` field of ${
        path.split(".")[0]
      }.`;
    this.decls.push(
      `${doc(description)}export const ${constName}: z.ZodObject<{\n${
        types.join("\n")
      }\n}, ${mode}> = ${ctor}({\n${
        fields.join("\n")
      }\n})${validations};\n/** The type of {@linkcode ${constName}}. */\nexport type ${name} = z.infer<typeof ${constName}>;\n`,
    );
    return { expr: constName, type: `typeof ${constName}` };
  }

  #refinement(rule: string, message: string | undefined, path: string) {
    // Transition rules compare with the stored object: only the API server
    // can check them.
    if (/\boldSelf\b/.test(rule)) return "";
    const js = celToJs(rule, path);
    return `.refine((self) => ${js}, { message: ${
      JSON.stringify(message ?? `failed rule: ${rule}`)
    } })`;
  }
}

function pascal(key: string): string {
  return key.charAt(0).toUpperCase() + key.slice(1);
}

function doc(text: string | undefined): string {
  return text ? `/** ${text.replaceAll("*/", "*\\/")} */\n` : "";
}

function snake(kind: string): string {
  return kind.replace(/([a-z0-9])([A-Z])/g, "$1_$2").toLowerCase();
}

const PRELUDE = `import { z } from "zod";
import { ObjectMetaSchema, uniqueBy } from "./meta.ts";
`;

/** The shared metadata schema and helpers, emitted as models/meta.ts. */
const META = `${header("hack/gen_models.ts")}
import { z } from "zod";

/** The fields of Kubernetes ObjectMeta that evictor reads; others are kept. */
export const ObjectMetaSchema: z.ZodObject<{
  name: z.ZodOptional<z.ZodString>;
  generateName: z.ZodOptional<z.ZodString>;
  namespace: z.ZodOptional<z.ZodString>;
  uid: z.ZodOptional<z.ZodString>;
  resourceVersion: z.ZodOptional<z.ZodString>;
  generation: z.ZodOptional<z.ZodNumber>;
  creationTimestamp: z.ZodOptional<z.ZodString>;
  deletionTimestamp: z.ZodOptional<z.ZodString>;
  labels: z.ZodOptional<z.ZodRecord<z.ZodString, z.ZodString>>;
  annotations: z.ZodOptional<z.ZodRecord<z.ZodString, z.ZodString>>;
  finalizers: z.ZodOptional<z.ZodArray<z.ZodString>>;
  ownerReferences: z.ZodOptional<z.ZodArray<z.ZodObject<{
    apiVersion: z.ZodString;
    kind: z.ZodString;
    name: z.ZodString;
    uid: z.ZodString;
    controller: z.ZodOptional<z.ZodBoolean>;
    blockOwnerDeletion: z.ZodOptional<z.ZodBoolean>;
  }, z.core.$loose>>>;
}, z.core.$loose> = z.looseObject({
  name: z.string().optional(),
  generateName: z.string().optional(),
  namespace: z.string().optional(),
  uid: z.string().optional(),
  resourceVersion: z.string().optional(),
  generation: z.number().int().optional(),
  creationTimestamp: z.string().optional(),
  deletionTimestamp: z.string().optional(),
  labels: z.record(z.string(), z.string()).optional(),
  annotations: z.record(z.string(), z.string()).optional(),
  finalizers: z.array(z.string()).optional(),
  ownerReferences: z.array(z.looseObject({
    apiVersion: z.string(),
    kind: z.string(),
    name: z.string(),
    uid: z.string(),
    controller: z.boolean().optional(),
    blockOwnerDeletion: z.boolean().optional(),
  })).optional(),
});
/** The type of {@linkcode ObjectMetaSchema}. */
export type ObjectMeta = z.infer<typeof ObjectMetaSchema>;

/**
 * Refuses lists with two entries that agree on \`keys\` (all of the value when
 * \`keys\` is empty), like the API server does for list-type map and set.
 */
export function uniqueBy(
  keys: string[],
): (list: unknown[], ctx: z.RefinementCtx) => void {
  return (list: unknown[], ctx: z.RefinementCtx): void => {
    const seen = new Set<string>();
    list.forEach((item, index) => {
      const key = keys.length === 0
        ? JSON.stringify(item)
        : JSON.stringify(Object.fromEntries(
          keys.map((k) => [k, (item as Record<string, unknown>)[k]]),
        ));
      if (seen.has(key)) {
        ctx.addIssue({
          code: "custom",
          message: \`Duplicate value: \${key}\`,
          path: [index],
        });
      }
      seen.add(key);
    });
  };
}
`;

function header(source: string): string {
  return `// Code generated by hack/gen_models.ts from ${source}. DO NOT EDIT.`;
}

/** Renders every model file: file name -> unformatted source. */
export async function render(): Promise<Map<string, string>> {
  const files = new Map<string, string>([["meta.ts", META]]);
  const exports: string[] = ['export * from "./meta.ts";'];
  const names: string[] = [];
  for await (const entry of Deno.readDir(CRD_DIR)) {
    if (entry.isFile && entry.name.endsWith(".yaml")) names.push(entry.name);
  }
  for (const file of names.sort()) {
    const crd = parseYaml(
      await Deno.readTextFile(new URL(file, CRD_DIR)),
    ) as Crd;
    const { group, names: { kind } } = crd.spec;
    for (const version of crd.spec.versions) {
      const emitter = new Emitter();
      const root = version.schema.openAPIV3Schema;
      emitter.convert(root, kind, kind);
      const apiVersion = `${group}/${version.name}`;
      const body = [
        header(`manifests/crds/${file}`),
        PRELUDE,
        `/** The apiVersion of ${kind}. */`,
        `export const ${kind}ApiVersion = ${JSON.stringify(apiVersion)};`,
        `/** How the framework finds ${kind} objects. */`,
        `export const ${kind}Resource = ${
          JSON.stringify({
            group,
            version: version.name,
            plural: crd.metadata.name.split(".")[0],
            kind,
            namespaced: false,
          })
        } as const;`,
        `/**`,
        ` * The printer columns of ${kind} (\`kubectl get\` after NAME; priority`,
        ` * 1 only with \`-o wide\`), as the CRD declares them.`,
        ` */`,
        `export const ${kind}PrinterColumns: readonly {`,
        `  readonly name: string;`,
        `  readonly type: string;`,
        `  readonly jsonPath: string;`,
        `  readonly priority: number;`,
        `}[] = ${
          JSON.stringify(
            (version.additionalPrinterColumns ?? []).map((c) => ({
              name: c.name,
              type: c.type,
              jsonPath: c.jsonPath,
              priority: c.priority ?? 0,
            })),
          )
        };`,
        ...emitter.decls,
      ].join("\n");
      const out = crd.spec.versions.length === 1
        ? `${snake(kind)}.ts`
        : `${snake(kind)}_${version.name}.ts`;
      files.set(out, body);
      exports.push(`export * from "./${out}";`);
    }
  }
  files.set(
    "mod.ts",
    `${
      header("manifests/crds")
    }\n\n/**\n * Types and zod schemas of evictor's custom resources, generated from the\n * CRDs' OpenAPI v3 schemas.\n *\n * @module\n */\n${
      exports.join("\n")
    }\n`,
  );
  return files;
}

async function format(source: string): Promise<string> {
  const child = new Deno.Command(Deno.execPath(), {
    args: ["fmt", "--ext=ts", "-"],
    stdin: "piped",
    stdout: "piped",
    stderr: "piped",
  }).spawn();
  const writer = child.stdin.getWriter();
  await writer.write(new TextEncoder().encode(source));
  await writer.close();
  const out = await child.output();
  if (!out.success) {
    throw new Error(`deno fmt failed: ${new TextDecoder().decode(out.stderr)}`);
  }
  return new TextDecoder().decode(out.stdout);
}

if (import.meta.main) {
  const check = Deno.args.includes("--check");
  const stale: string[] = [];
  const rendered = await render();
  if (!check) await Deno.mkdir(OUT_DIR, { recursive: true });
  for (const [name, source] of rendered) {
    const formatted = await format(source);
    const target = new URL(name, OUT_DIR);
    const current = await Deno.readTextFile(target).catch(() => undefined);
    if (current === formatted) continue;
    if (check) stale.push(`models/${name}`);
    else await Deno.writeTextFile(target, formatted);
  }
  for await (const entry of Deno.readDir(OUT_DIR)) {
    if (!rendered.has(entry.name)) {
      if (check) stale.push(`models/${entry.name} (not generated)`);
      else await Deno.remove(new URL(entry.name, OUT_DIR));
    }
  }
  if (stale.length > 0) {
    console.error(
      `models/ is stale (${stale.join(", ")}): run \`deno task gen\``,
    );
    Deno.exit(1);
  }
}
