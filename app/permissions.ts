/**
 * The permissions evictor runs with, in one place: `deno task compile` bakes
 * them into the binary and the tests run `main.ts` with exactly these, so a
 * missing permission fails a test instead of a deployment.
 *
 * Never `--allow-run`, `--allow-ffi` or `--allow-write`.
 *
 * @module
 */

/** Folders the binary may read: nothing else. */
export const READ_PATHS = [
  // The service-account token and CA when running in a cluster.
  "/var/run/secrets/kubernetes.io/serviceaccount",
  // clouds.yaml and secure.yaml, as the openstack CLI looks for them.
  "/etc/openstack",
  // The webhook's serving certificate (a mounted Secret), and a kubeconfig
  // when one is used outside a cluster.
  "/etc/evictor",
  // Local runs and tests keep their kubeconfig and clouds.yaml here.
  "/tmp/evictor",
  // prom-client's process metrics (CPU, memory, open files).
  "/proc/self",
] as const;

/** Environment variables the binary may read. */
export const ENV_NAMES = [
  "HOME",
  "KUBECONFIG",
  "KUBERNETES_SERVICE_HOST",
  "KUBERNETES_SERVICE_PORT",
  "POD_NAME",
  "POD_NAMESPACE",
  "EVICTOR_*",
  "OS_*",
  // The yaml package checks these for debug output.
  "LOG_TOKENS",
  "LOG_STREAM",
  "NO_COLOR",
  // pino's worker-thread helper checks it.
  "NODE_V8_COVERAGE",
] as const;

/**
 * The permission flags of `deno run` / `deno compile`.
 *
 * The network cannot be narrowed to hosts: the Nova and Placement endpoints
 * come from the Keystone catalog at run time, and the API server's address
 * from the kubeconfig or the pod's environment.
 *
 * @example
 * ```ts
 * import { PERMISSION_FLAGS } from "./permissions.ts";
 * console.assert(!PERMISSION_FLAGS.some((f) => f.startsWith("--allow-run")));
 * ```
 */
export const PERMISSION_FLAGS: readonly string[] = Object.freeze([
  `--allow-read=${READ_PATHS.join(",")}`,
  `--allow-env=${ENV_NAMES.join(",")}`,
  "--allow-net",
  "--allow-sys=hostname,osRelease,loadavg,uid,gid",
]);

/**
 * V8 flags the compile task bakes into `evictor` (and bench:framework runs
 * main.ts with): young-generation semi-spaces of at most 2 MB instead of
 * V8's 16 MB. With 5,000 Hypervisors and 100 Evictions (bench:framework;
 * `--v8-flags=` runs it without) the peak RSS was 297-310 MB without and
 * 177-212 MB with, settled 203-217 MB and 149-167 MB: shorter, more
 * frequent scavenges keep the peak near the settled figure.
 *
 * @example
 * ```ts
 * import { V8_FLAGS } from "./permissions.ts";
 * console.assert(V8_FLAGS.every((f) => f.startsWith("--")));
 * ```
 */
export const V8_FLAGS: readonly string[] = Object.freeze([
  "--max-semi-space-size=2",
]);

/**
 * What `deno compile` adds to both executables: no permission prompt (a
 * refused permission fails at once; there is no terminal in a pod), no
 * remote modules at compile time (`--no-remote`: everything embedded comes
 * from this repository or npm) and none at run time (`--deny-import` denies
 * every remote import, whatever hosts Deno allows by default).
 *
 * @example
 * ```ts
 * import { COMPILE_LOCKDOWN_FLAGS } from "./permissions.ts";
 * console.assert(COMPILE_LOCKDOWN_FLAGS.includes("--no-prompt"));
 * ```
 */
export const COMPILE_LOCKDOWN_FLAGS: readonly string[] = Object.freeze([
  "--no-prompt",
  "--no-remote",
  "--deny-import",
]);

/**
 * The permission flags of the kubectl plugin (`kubectl-evictor`): it runs on
 * a person's machine, reads their kubeconfig wherever it is, and talks to
 * their API server. It runs the credential plugin that a kubeconfig user's
 * `exec` names (kubelogin, `aws eks get-token`, ...), as kubectl does, so
 * it may spawn programs (which ones is the kubeconfig's choice, hence no
 * list); it never writes files or loads native code.
 *
 * @example
 * ```ts
 * import { PLUGIN_PERMISSION_FLAGS } from "./permissions.ts";
 * console.assert(PLUGIN_PERMISSION_FLAGS.includes("--allow-net"));
 * ```
 */
export const PLUGIN_PERMISSION_FLAGS: readonly string[] = Object.freeze([
  "--allow-read",
  "--allow-env",
  "--allow-net",
  "--allow-run",
]);
