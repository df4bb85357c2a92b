/**
 * The real Helm for tests: built from the Go module pinned in `hack/helm/`
 * (on first use; cached), run with its own empty config, cache and data
 * folders so that no user's repositories or plugins take part.
 *
 * @module
 */
import { buildHackTool } from "./hack_tools.ts";
import { makeOwnedTempDir } from "./processes.ts";

const ROOT = new URL("../../", import.meta.url);

/** What one helm run printed, and how it ended. */
export interface HelmResult {
  code: number;
  stdout: string;
  stderr: string;
}

let binary: Promise<string> | undefined;

/**
 * The path of the helm executable: `HELM_BIN` when set, else the one
 * `hack/helm/build.sh` built (it builds it when missing; a fresh machine
 * needs only Go).
 *
 * @example
 * ```ts ignore
 * console.log(await helmBinary()); // ~/.cache/evictor/helm/v4.3.1-.../helm
 * ```
 */
export function helmBinary(): Promise<string> {
  binary ??= buildHackTool("helm");
  return binary;
}

let home: Promise<string> | undefined;

/**
 * Runs helm with `args` (from the repository root) and returns what it
 * printed; never throws for a non-zero exit.
 *
 * @example
 * ```ts ignore
 * const { code, stdout } = await helm(["template", "evictor", "charts/evictor"]);
 * ```
 */
export async function helm(args: string[]): Promise<HelmResult> {
  home ??= makeOwnedTempDir(Deno.env.get("TMPDIR") ?? "/tmp", "evictor-helm-");
  const dir = await home;
  const out = await new Deno.Command(await helmBinary(), {
    args,
    cwd: ROOT.pathname,
    stdin: "null",
    stdout: "piped",
    stderr: "piped",
    env: {
      HELM_CACHE_HOME: `${dir}/cache`,
      HELM_CONFIG_HOME: `${dir}/config`,
      HELM_DATA_HOME: `${dir}/data`,
      NO_COLOR: "1",
    },
  }).output();
  const text = new TextDecoder();
  return {
    code: out.code,
    stdout: text.decode(out.stdout),
    stderr: text.decode(out.stderr),
  };
}
