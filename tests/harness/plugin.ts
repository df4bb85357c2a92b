/**
 * Runs the kubectl plugin as kubectl does (bin/kubectl-evictor), with a
 * clean environment: only PATH, HOME, DENO_DIR and the variables given.
 *
 * @module
 */

/** What the plugin printed and how it exited. */
export interface PluginRun {
  /** Exit code. */
  code: number;
  /** Standard output. */
  stdout: string;
  /** Standard error. */
  stderr: string;
}

/**
 * Runs `kubectl-evictor ARGS` with `env` (KUBECONFIG, OS_* ...).
 *
 * @example
 * ```ts ignore
 * const run = await runPlugin(["plan", "node042", "-o", "json"], { KUBECONFIG: path });
 * ```
 */
export async function runPlugin(
  args: string[],
  env: Record<string, string>,
): Promise<PluginRun> {
  const dir = Deno.env.get("DENO_DIR");
  const out = await new Deno.Command(
    new URL("../../bin/kubectl-evictor", import.meta.url).pathname,
    {
      args,
      env: {
        PATH: Deno.env.get("PATH") ?? "",
        HOME: Deno.env.get("HOME") ?? "/tmp",
        ...(dir ? { DENO_DIR: dir } : {}),
        ...env,
      },
      clearEnv: true,
      stdin: "null",
      stdout: "piped",
      stderr: "piped",
    },
  ).output();
  const d = new TextDecoder();
  return {
    code: out.code,
    stdout: d.decode(out.stdout),
    stderr: d.decode(out.stderr),
  };
}
