/**
 * A lightweight kubeconfig loader (client certificates, bearer tokens,
 * token files, CA data or files; in-cluster service account). It exists so
 * that the operator need not load `@kubernetes/client-node` at run time,
 * which alone costs about 85 MB of resident memory; pass a client-node
 * `KubeConfig` instead when you need its auth plugins (exec, OIDC).
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

function named(list: unknown, name: string, field: string, file: string): Rec {
  const found = Array.isArray(list)
    ? list.map(rec).find((e) => e.name === name)
    : undefined;
  if (found === undefined) {
    throw new TypeError(`kubeconfig ${file}: no ${field} named "${name}"`);
  }
  return rec(found[field]);
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
  const dir = path.replace(/\/[^/]*$/, "") || ".";
  const abs = (p: string) => (p.startsWith("/") ? p : `${dir}/${p}`);
  const doc = rec(parseYaml(await Deno.readTextFile(path)));
  const ctxName = context ?? str(doc["current-context"]);
  if (ctxName === undefined) {
    throw new TypeError(`kubeconfig ${path} has no current-context`);
  }
  const ctx = named(doc.contexts, ctxName, "context", path);
  const cluster = named(doc.clusters, str(ctx.cluster) ?? "", "cluster", path);
  const user = str(ctx.user) === undefined
    ? {}
    : named(doc.users, str(ctx.user) ?? "", "user", path);
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
  const read = async (data: unknown, file: unknown) => {
    const d = str(data);
    if (d !== undefined) return b64(d);
    const f = str(file);
    return f === undefined ? undefined : await Deno.readTextFile(abs(f));
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
    tokenFile: str(user.tokenFile) === undefined
      ? undefined
      : abs(str(user.tokenFile) ?? ""),
  };
}

/**
 * client-node's `loadFromDefault` order: the first file in `KUBECONFIG`,
 * else `~/.kube/config`, else the in-cluster service account.
 *
 * @example
 * ```ts ignore
 * const creds = await loadDefaultCredentials();
 * ```
 */
export async function loadDefaultCredentials(): Promise<ClusterCredentials> {
  const fromEnv = (Deno.env.get("KUBECONFIG") ?? "").split(":").filter((p) =>
    p !== "" && exists(p)
  );
  const first = fromEnv[0];
  if (first !== undefined) return await readKubeconfigFile(first);
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
