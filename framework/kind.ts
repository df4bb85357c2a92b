/**
 * Kind descriptors: what the framework needs to know to list, watch and
 * write one resource type, and the object keys derived from them.
 *
 * @module
 */

import type { ZodType } from "zod";

/** The object metadata fields the framework reads and writes. */
export interface ObjectMeta {
  /** Object name. */
  name?: string | undefined;
  /** Namespace, for namespaced kinds. */
  namespace?: string | undefined;
  /** Server-assigned unique id. */
  uid?: string | undefined;
  /** Optimistic concurrency token. */
  resourceVersion?: string | undefined;
  /** Spec generation. */
  generation?: number | undefined;
  /** Labels. */
  labels?: Record<string, string> | undefined;
  /** Annotations. */
  annotations?: Record<string, string> | undefined;
  /** Finalizers that block deletion. */
  finalizers?: string[] | undefined;
  /** Set when deletion was requested. */
  deletionTimestamp?: string | Date | undefined;
  /** Creation time. */
  creationTimestamp?: string | Date | undefined;
}

/** Any Kubernetes object, as far as the framework is concerned. */
export interface KubeObject {
  /** `group/version` or `v1`. */
  apiVersion?: string | undefined;
  /** The kind name. */
  kind?: string | undefined;
  /** Object metadata. */
  metadata?: ObjectMeta | undefined;
}

/**
 * Whether the object is being deleted (`metadata.deletionTimestamp` set).
 *
 * @example
 * ```ts
 * import { isDeleting } from "./kind.ts";
 * console.assert(isDeleting({ metadata: { deletionTimestamp: "2026-01-01T00:00:00Z" } }));
 * console.assert(!isDeleting({ metadata: {} }));
 * ```
 */
export function isDeleting(obj: KubeObject): boolean {
  const ts = obj.metadata?.deletionTimestamp;
  return ts !== undefined && ts !== null && ts !== "";
}

/** The identity of a resource type. */
export interface KindDescriptor {
  /** API group; "" for the core group. */
  group: string;
  /** API version, e.g. "v1". */
  version: string;
  /** Plural resource name used in URLs, e.g. "evictions". */
  plural: string;
  /** Kind name, e.g. "Eviction". */
  kind: string;
  /** Whether objects live in namespaces. */
  namespaced: boolean;
}

/**
 * A resource type plus the TypeScript type (and optional zod schema) of
 * its objects. Objects that fail the schema are logged and skipped.
 */
export interface Kind<T extends KubeObject = KubeObject>
  extends KindDescriptor {
  /** Parses objects at the boundary; invalid ones are skipped. */
  schema?: ZodType<T> | undefined;
}

/** Options of {@linkcode defineKind}. */
export interface KindOptions<T extends KubeObject> {
  /** zod schema applied to every object read from the API server. */
  schema?: ZodType<T>;
}

const DNS_LABEL = /^[a-z0-9]([-a-z0-9]*[a-z0-9])?$/;

/**
 * Declares a kind; validates the descriptor and names any bad field.
 *
 * @example
 * ```ts
 * import { defineKind } from "./kind.ts";
 * const Eviction = defineKind({
 *   group: "kvm.cloud.sap", version: "v1", plural: "evictions",
 *   kind: "Eviction", namespaced: false,
 * });
 * console.assert(Eviction.plural === "evictions");
 * ```
 */
export function defineKind<T extends KubeObject = KubeObject>(
  descriptor: KindDescriptor,
  options: KindOptions<T> = {},
): Kind<T> {
  const { group, version, plural, kind, namespaced } = descriptor;
  if (group !== "" && !/^[a-z0-9.-]+$/.test(group)) {
    throw new TypeError(`Kind group must be a DNS subdomain, got "${group}"`);
  }
  if (!DNS_LABEL.test(version)) {
    throw new TypeError(`Kind version must be a DNS label, got "${version}"`);
  }
  if (!DNS_LABEL.test(plural)) {
    throw new TypeError(
      `Kind plural must be a lowercase DNS label, got "${plural}"`,
    );
  }
  if (!/^[A-Z][A-Za-z0-9]*$/.test(kind)) {
    throw new TypeError(`Kind kind must be CamelCase, got "${kind}"`);
  }
  const out: Kind<T> = { group, version, plural, kind, namespaced };
  if (options.schema !== undefined) out.schema = options.schema;
  return Object.freeze(out);
}

/**
 * `apiVersion` of a kind: `group/version`, or `version` for the core group.
 *
 * @example
 * ```ts
 * import { apiVersionOf } from "./kind.ts";
 * console.assert(apiVersionOf({ group: "", version: "v1" }) === "v1");
 * ```
 */
export function apiVersionOf(
  kind: Pick<KindDescriptor, "group" | "version">,
): string {
  return kind.group === "" ? kind.version : `${kind.group}/${kind.version}`;
}

/** Where in the URL space an API call goes. */
export interface PathOptions {
  /** Namespace (namespaced kinds only; omit to address all namespaces). */
  namespace?: string | undefined;
  /** Object name. */
  name?: string | undefined;
  /** Subresource such as "status". */
  subresource?: string | undefined;
}

/**
 * The REST path of a collection, object or subresource.
 *
 * @example
 * ```ts
 * import { kindPath } from "./kind.ts";
 * const cm = { group: "", version: "v1", plural: "configmaps", kind: "ConfigMap", namespaced: true };
 * console.assert(kindPath(cm, { namespace: "x", name: "y" }) === "/api/v1/namespaces/x/configmaps/y");
 * ```
 */
export function kindPath(kind: KindDescriptor, opts: PathOptions = {}): string {
  let path = kind.group === ""
    ? `/api/${kind.version}`
    : `/apis/${kind.group}/${kind.version}`;
  if (kind.namespaced && opts.namespace !== undefined) {
    path += `/namespaces/${encodeURIComponent(opts.namespace)}`;
  }
  path += `/${kind.plural}`;
  if (opts.name !== undefined) {
    path += `/${encodeURIComponent(opts.name)}`;
    if (opts.subresource !== undefined) path += `/${opts.subresource}`;
  }
  return path;
}

/**
 * The key of an object: `namespace/name` for namespaced kinds, else `name`.
 *
 * @example
 * ```ts
 * import { objectKey } from "./kind.ts";
 * console.assert(objectKey({ metadata: { namespace: "a", name: "b" } }) === "a/b");
 * console.assert(objectKey({ metadata: { name: "b" } }) === "b");
 * ```
 */
export function objectKey(obj: KubeObject): string {
  const name = obj.metadata?.name;
  if (name === undefined || name === "") {
    throw new TypeError("object has no metadata.name");
  }
  const ns = obj.metadata?.namespace;
  return ns === undefined || ns === "" ? name : `${ns}/${name}`;
}

/**
 * Splits a key into namespace and name.
 *
 * @example
 * ```ts
 * import { parseKey } from "./kind.ts";
 * console.assert(parseKey("a/b").namespace === "a");
 * console.assert(parseKey("b").namespace === undefined);
 * ```
 */
export function parseKey(
  key: string,
): { namespace: string | undefined; name: string } {
  const i = key.indexOf("/");
  if (i < 0) {
    if (key === "") throw new TypeError('object key must not be empty, got ""');
    return { namespace: undefined, name: key };
  }
  const namespace = key.slice(0, i);
  const name = key.slice(i + 1);
  if (namespace === "" || name === "" || name.includes("/")) {
    throw new TypeError(
      `object key must be "name" or "namespace/name", got "${key}"`,
    );
  }
  return { namespace, name };
}

/**
 * A stable id of a kind, e.g. `kvm.cloud.sap/v1/evictions` or `v1/configmaps`.
 *
 * @example
 * ```ts
 * import { kindId } from "./kind.ts";
 * console.assert(kindId({ group: "", version: "v1", plural: "pods" }) === "v1/pods");
 * ```
 */
export function kindId(
  kind: Pick<KindDescriptor, "group" | "version" | "plural">,
): string {
  return `${apiVersionOf(kind)}/${kind.plural}`;
}
