/**
 * Runs the real `main.ts` as a separate process with exactly the permission
 * flags that `deno task compile` bakes into the binary, so that tests can
 * kill it, restart it and catch a missing permission.
 *
 * @module
 */
import { PERMISSION_FLAGS } from "../../app/permissions.ts";
import {
  makeOwnedTempDir,
  type ManagedProcess,
  startProcess,
  tail,
} from "./processes.ts";

const MAIN = new URL("../../main.ts", import.meta.url).pathname;

/** The folder under which the binary may read a kubeconfig and clouds.yaml. */
export const STAGING_ROOT = "/tmp/evictor";

/** What the operator process gets. */
export interface OperatorProcessOptions {
  /** A kubeconfig file; copied under {@linkcode STAGING_ROOT}. */
  kubeconfigPath: string;
  /** clouds.yaml text (for example `sim.cloudsYaml()`). */
  cloudsYaml: string;
  /** The cloud in it (default the first). */
  cloud?: string;
  /** Flags after `run`. */
  args?: string[];
  /** More environment variables (the process sees nothing else). */
  env?: Record<string, string>;
}

/** A running operator process. */
export interface OperatorProcess extends ManagedProcess {
  /** The folder with its kubeconfig, clouds.yaml and log. */
  dir: string;
  /** The log so far. */
  log(): Promise<string>;
}

/** The folders this process staged: removed when it ends. */
const ownDirs = new Set<string>();
globalThis.addEventListener("unload", () => {
  for (const dir of ownDirs) {
    try {
      Deno.removeSync(dir, { recursive: true });
    } catch {
      // already gone
    }
  }
});

/**
 * Stages the files under {@linkcode STAGING_ROOT} and starts
 * `deno run <permissions> main.ts run ...`.
 *
 * @example
 * ```ts ignore
 * const op = await startOperatorProcess({ kubeconfigPath, cloudsYaml: sim.cloudsYaml() });
 * await op.stop();
 * ```
 */
export async function startOperatorProcess(
  options: OperatorProcessOptions,
): Promise<OperatorProcess> {
  const dir = await makeOwnedTempDir(STAGING_ROOT, "op-");
  ownDirs.add(dir);
  await Deno.copyFile(options.kubeconfigPath, `${dir}/kubeconfig`);
  await Deno.writeTextFile(`${dir}/clouds.yaml`, options.cloudsYaml);
  const cloud = options.cloud ??
    /^clouds:\s*\n\s+([A-Za-z0-9_.-]+):/m.exec(options.cloudsYaml)?.[1] ??
    "evictor";
  const logPath = `${dir}/operator.log`;
  const proc = startProcess(
    "evictor",
    Deno.execPath(),
    [
      "run",
      "--frozen",
      ...PERMISSION_FLAGS,
      MAIN,
      "run",
      `--kubeconfig=${dir}/kubeconfig`,
      `--os-cloud=${cloud}`,
      // tests run side by side: no fixed probe port unless a test asks
      "--health-probe-bind-address=0",
      ...(options.args ?? []),
    ],
    logPath,
    {
      ...toolchainEnv(),
      OS_CLIENT_CONFIG_FILE: `${dir}/clouds.yaml`,
      HOME: dir,
      NO_COLOR: "1",
      ...options.env,
    },
  );
  return {
    ...proc,
    dir,
    log: () => Deno.readTextFile(logPath).catch(() => ""),
  };
}

/**
 * What Deno itself needs from this environment to run main.ts: the same
 * module cache (HOME changes for the child) and the machine's TLS and proxy
 * settings for the npm registry. main.ts never reads these: its own reads
 * are limited by the permission flags.
 */
export function toolchainEnv(): Record<string, string> {
  const env = Deno.env.toObject();
  const home = env["HOME"] ?? "/root";
  const out: Record<string, string> = {
    DENO_DIR: env["DENO_DIR"] ??
      `${env["XDG_CACHE_HOME"] ?? `${home}/.cache`}/deno`,
  };
  for (const [name, value] of Object.entries(env)) {
    if (/^(DENO_|SSL_CERT_|NODE_EXTRA_CA_CERTS$)|_proxy$|_PROXY$/.test(name)) {
      out[name] = value;
    }
  }
  return out;
}

/** The last lines of an operator's log, for assertion messages. */
export function operatorLogTail(op: OperatorProcess, lines = 40) {
  return tail(op.logPath, lines);
}
