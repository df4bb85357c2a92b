/**
 * A lightweight kubeconfig loader (client certificates, bearer tokens,
 * token files, CA data or files; in-cluster service account), with
 * kubectl's rules for merging the files of a colon-separated `KUBECONFIG`.
 * It exists so that the operator need not load `@kubernetes/client-node` at
 * run time (tens of MB of resident memory); pass a client-node `KubeConfig`
 * instead when you need its auth plugins (exec, OIDC).
 *
 * @module
 */

import { parse as parseYaml } from "yaml";

/** What a client needs to reach and authenticate to an API server. */
export interface ClusterCredentials {
  /** API server URL. */
  server: string;
  /** CA bundle (PEM) to verify the server. */
  caPem?: string | undefined;
  /** Client certificate (PEM). */
  certPem?: string | undefined;
  /** Client key (PEM). */
  keyPem?: string | undefined;
  /** Static bearer token. */
  token?: string | undefined;
  /** File holding a bearer token, re-read as it rotates. */
  tokenFile?: string | undefined;
}

const SA_DIR = "/var/run/secrets/kubernetes.io/serviceaccount";

function exists(path: string): boolean {
  try {
    Deno.statSync(path);
    return true;
  } catch {
    return false;
  }
}

const b64 = (s: string) =>
  new TextDecoder().decode(Uint8Array.from(atob(s), (c) => c.charCodeAt(0)));

type Rec = Record<string, unknown>;
const rec = (
  v: unknown,
): Rec => (typeof v === "object" && v !== null ? v as Rec : {});
const str = (
  v: unknown,
): string | undefined => (typeof v === "string" && v !== "" ? v : undefined);

/**
 * The files a `KUBECONFIG` value names, in order (colon-separated, empty
 * entries dropped, duplicates kept once).
 *
 * @example
 * ```ts
 * import { kubeconfigPathsFromEnv } from "./kubeconfig.ts";
 * console.log(kubeconfigPathsFromEnv("/a::/b:/a")); // ["/a", "/b"]
 * ```
 */
export function kubeconfigPathsFromEnv(value: string | undefined): string[] {
  return [...new Set((value ?? "").split(":").filter((p) => p !== ""))];
}

function named(list: unknown, name: string, field: string, file: string): Rec {
  const found = Array.isArray(list)
    ? list.map(rec).find((e) => e.name === name)
    : undefined;
  if (found === undefined) {
    throw new TypeError(`kubeconfig ${file}: no ${field} named "${name}"`);
  }
  return rec(found[field]);
}

/** One kubeconfig file, read and parsed. */
export interface KubeconfigFile {
  /** Where it was read (relative references are relative to its folder). */
  path: string;
  /** The parsed document. */
  doc: unknown;
}

/** A kubeconfig merged from one or more files, as kubectl merges them. */
export interface MergedKubeconfig {
  /** The files merged, in order (for messages). */
  files: string[];
  /** `current-context`: from the first file that sets one. */
  currentContext: string | undefined;
  /** Clusters by name: the first file to define a name wins. */
  clusters: Rec[];
  /** Users by name: the first file to define a name wins. */
  users: Rec[];
  /** Contexts by name: the first file to define a name wins. */
  contexts: Rec[];
}

/** kubectl resolves these file references against the file's folder. */
const CLUSTER_PATHS = ["certificate-authority"];
const USER_PATHS = ["client-certificate", "client-key", "tokenFile"];

function absolute(dir: string, p: string): string {
  return p.startsWith("/") ? p : `${dir}/${p}`;
}

function withAbsolutePaths(
  entry: Rec,
  field: string,
  keys: string[],
  dir: string,
): Rec {
  const inner = { ...rec(entry[field]) };
  for (const k of keys) {
    const v = str(inner[k]);
    if (v !== undefined) inner[k] = absolute(dir, v);
  }
  // client-go resolves an exec command only when it names a path
  const exec = rec(inner.exec);
  const command = str(exec.command);
  if (command !== undefined && command.includes("/")) {
    inner.exec = { ...exec, command: absolute(dir, command) };
  }
  return { ...entry, [field]: inner };
}

/**
 * Merges kubeconfig files the way kubectl (client-go's `clientcmd`) does
 * for a colon-separated `KUBECONFIG`: for every cluster, user and context
 * name the first file that defines it wins, whole; `current-context` comes
 * from the first file that sets it; relative file references are made
 * absolute against the folder of the file they appear in. Pure.
 *
 * @example
 * ```ts
 * import { mergeKubeconfigs } from "./kubeconfig.ts";
 * const merged = mergeKubeconfigs([
 *   { path: "/a/config", doc: { contexts: [{ name: "x", context: { cluster: "a" } }] } },
 *   { path: "/b/config", doc: { "current-context": "x", contexts: [{ name: "x", context: { cluster: "b" } }] } },
 * ]);
 * console.assert(merged.currentContext === "x");
 * console.assert(merged.contexts[0]?.context !== undefined);
 * ```
 */
export function mergeKubeconfigs(
  files: readonly KubeconfigFile[],
): MergedKubeconfig {
  const merged: MergedKubeconfig = {
    files: files.map((f) => f.path),
    currentContext: undefined,
    clusters: [],
    users: [],
    contexts: [],
  };
  const add = (into: Rec[], list: unknown, fix: (e: Rec) => Rec) => {
    if (!Array.isArray(list)) return;
    for (const entry of list.map(rec)) {
      const name = str(entry.name);
      if (name === undefined || into.some((e) => e.name === name)) continue;
      into.push(fix(entry));
    }
  };
  for (const file of files) {
    const doc = rec(file.doc);
    const dir = file.path.replace(/\/[^/]*$/, "") || ".";
    merged.currentContext ??= str(doc["current-context"]);
    add(
      merged.clusters,
      doc.clusters,
      (e) => withAbsolutePaths(e, "cluster", CLUSTER_PATHS, dir),
    );
    add(
      merged.users,
      doc.users,
      (e) => withAbsolutePaths(e, "user", USER_PATHS, dir),
    );
    add(merged.contexts, doc.contexts, (e) => e);
  }
  return merged;
}

/**
 * The merged kubeconfig as one document (`apiVersion: v1, kind: Config`),
 * e.g. for `@kubernetes/client-node`'s `loadFromString`.
 *
 * @example
 * ```ts
 * import { kubeconfigDocument, mergeKubeconfigs } from "./kubeconfig.ts";
 * const doc = kubeconfigDocument(mergeKubeconfigs([{ path: "/c", doc: { "current-context": "x" } }]));
 * console.assert(doc["current-context"] === "x");
 * ```
 */
export function kubeconfigDocument(
  merged: MergedKubeconfig,
): Record<string, unknown> {
  return {
    apiVersion: "v1",
    kind: "Config",
    clusters: merged.clusters,
    users: merged.users,
    contexts: merged.contexts,
    ...(merged.currentContext === undefined
      ? {}
      : { "current-context": merged.currentContext }),
  };
}

/**
 * The context a client uses: `context` when given (it must exist), else
 * the merged `current-context`; an error names the files and the contexts
 * they define.
 *
 * @example
 * ```ts
 * import { mergeKubeconfigs, selectContext } from "./kubeconfig.ts";
 * const m = mergeKubeconfigs([{ path: "/c", doc: { contexts: [{ name: "x", context: {} }] } }]);
 * console.assert(selectContext(m, "x") === "x");
 * ```
 */
export function selectContext(
  merged: MergedKubeconfig,
  context?: string,
): string {
  const where = merged.files.join(":");
  const known = merged.contexts.map((c) => String(c.name));
  const expected = `expected one of: ${
    known.length === 0 ? "(none)" : known.join(", ")
  }`;
  if (context !== undefined) {
    if (!known.includes(context)) {
      throw new TypeError(
        `context "${context}" is not in kubeconfig ${where}; ${expected}`,
      );
    }
    return context;
  }
  const current = merged.currentContext;
  if (current === undefined) {
    throw new TypeError(
      `kubeconfig ${where} has no current-context; ${expected}`,
    );
  }
  if (!known.includes(current)) {
    throw new TypeError(
      `kubeconfig ${where}: current-context "${current}" is not defined; ${expected}`,
    );
  }
  return current;
}

/**
 * Reads and parses the kubeconfig files that exist among `paths` (missing
 * ones are skipped, as kubectl skips them in `KUBECONFIG`).
 *
 * @example
 * ```ts ignore
 * const files = await readKubeconfigs(["/home/me/.kube/config", "/home/me/.kube/eu"]);
 * ```
 */
export async function readKubeconfigs(
  paths: readonly string[],
): Promise<KubeconfigFile[]> {
  const files: KubeconfigFile[] = [];
  for (const path of new Set(paths)) {
    let text: string;
    try {
      text = await Deno.readTextFile(path);
    } catch (e) {
      if (e instanceof Deno.errors.NotFound) continue;
      throw e;
    }
    let doc: unknown;
    try {
      doc = parseYaml(text) ?? {};
    } catch (e) {
      const first = (e instanceof Error ? e.message : String(e)).split("\n")[0];
      throw new TypeError(`kubeconfig ${path}: not valid YAML: ${first}`);
    }
    files.push({ path, doc });
  }
  return files;
}

/**
 * Reads credentials from a kubeconfig file's current (or given) context.
 *
 * @example
 * ```ts ignore
 * const creds = await readKubeconfigFile("/home/me/.kube/config");
 * console.log(creds.server);
 * ```
 */
export async function readKubeconfigFile(
  path: string,
  context?: string,
): Promise<ClusterCredentials> {
  return await readKubeconfigFiles([path], context);
}

/**
 * Reads credentials from kubeconfig files merged as kubectl merges
 * `KUBECONFIG` ({@linkcode mergeKubeconfigs}); at least one must exist.
 *
 * @example
 * ```ts ignore
 * const creds = await readKubeconfigFiles(["/etc/kc/a", "/etc/kc/b"], "eu-de-1");
 * ```
 */
export async function readKubeconfigFiles(
  paths: readonly string[],
  context?: string,
): Promise<ClusterCredentials> {
  const files = await readKubeconfigs(paths);
  if (files.length === 0) {
    throw new TypeError(
      `kubeconfig ${paths.join(":")}: no such file; expected a kubeconfig file`,
    );
  }
  return await credentialsOf(mergeKubeconfigs(files), context);
}

async function credentialsOf(
  merged: MergedKubeconfig,
  context: string | undefined,
): Promise<ClusterCredentials> {
  const path = merged.files.join(":");
  const ctxName = selectContext(merged, context);
  const ctx = named(merged.contexts, ctxName, "context", path);
  const cluster = named(
    merged.clusters,
    str(ctx.cluster) ?? "",
    "cluster",
    path,
  );
  const user = str(ctx.user) === undefined
    ? {}
    : named(merged.users, str(ctx.user) ?? "", "user", path);
  const server = str(cluster.server);
  if (server === undefined) {
    throw new TypeError(
      `kubeconfig ${path}: cluster of context "${ctxName}" has no server`,
    );
  }
  if (cluster["insecure-skip-tls-verify"] === true) {
    throw new TypeError(
      `kubeconfig ${path}: insecure-skip-tls-verify is not supported`,
    );
  }
  if (user.exec !== undefined || user["auth-provider"] !== undefined) {
    throw new TypeError(
      `kubeconfig ${path}: user of context "${ctxName}" uses an auth plugin; pass a @kubernetes/client-node KubeConfig instead`,
    );
  }
  // paths are absolute already (mergeKubeconfigs)
  const read = async (data: unknown, file: unknown) => {
    const d = str(data);
    if (d !== undefined) return b64(d);
    const f = str(file);
    return f === undefined ? undefined : await Deno.readTextFile(f);
  };
  return {
    server,
    caPem: await read(
      cluster["certificate-authority-data"],
      cluster["certificate-authority"],
    ),
    certPem: await read(
      user["client-certificate-data"],
      user["client-certificate"],
    ),
    keyPem: await read(user["client-key-data"], user["client-key"]),
    token: str(user.token),
    tokenFile: str(user.tokenFile),
  };
}

/**
 * kubectl's order: the files of `KUBECONFIG` (colon-separated, merged as
 * {@linkcode mergeKubeconfigs} says, missing ones skipped), else
 * `~/.kube/config`, else the in-cluster service account.
 *
 * @example
 * ```ts ignore
 * const creds = await loadDefaultCredentials();
 * ```
 */
export async function loadDefaultCredentials(): Promise<ClusterCredentials> {
  const fromEnv = kubeconfigPathsFromEnv(Deno.env.get("KUBECONFIG"));
  if (fromEnv.some(exists)) return await readKubeconfigFiles(fromEnv);
  const home = Deno.env.get("HOME");
  if (home !== undefined && exists(`${home}/.kube/config`)) {
    return await readKubeconfigFile(`${home}/.kube/config`);
  }
  const host = Deno.env.get("KUBERNETES_SERVICE_HOST");
  const port = Deno.env.get("KUBERNETES_SERVICE_PORT") ?? "443";
  if (host !== undefined && exists(`${SA_DIR}/token`)) {
    return {
      server: `https://${host.includes(":") ? `[${host}]` : host}:${port}`,
      caPem: await Deno.readTextFile(`${SA_DIR}/ca.crt`),
      tokenFile: `${SA_DIR}/token`,
    };
  }
  throw new TypeError(
    "no Kubernetes credentials: KUBECONFIG names no existing file, ~/.kube/config is absent and this is not a pod",
  );
}
