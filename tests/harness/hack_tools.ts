/**
 * The tools the tests run that are built from pinned Go modules by a
 * `hack/<tool>/build.sh` (built on first use into the cache folder
 * `${EVICTOR_CACHE_DIR:-${XDG_CACHE_HOME:-$HOME/.cache}/evictor}`, then
 * reused; a lock makes parallel runs wait for one build).
 *
 * @module
 */

const ROOT = new URL("../../", import.meta.url);

/**
 * Runs `hack/<tool>/build.sh` (its progress goes to stderr: a line of
 * elapsed time every 20 s while it downloads, builds or waits for another
 * run's build) and returns the path it prints: the built binary or folder.
 *
 * @example
 * ```ts ignore
 * const bin = await buildHackTool("envtest"); // the folder with kube-apiserver
 * ```
 */
export async function buildHackTool(tool: string): Promise<string> {
  const script = new URL(`hack/${tool}/build.sh`, ROOT).pathname;
  const out = await new Deno.Command("bash", {
    args: [script],
    stdin: "null",
    stdout: "piped",
    stderr: "inherit",
  }).output();
  if (!out.success) {
    throw new Error(`hack/${tool}/build.sh failed with exit code ${out.code}`);
  }
  return new TextDecoder().decode(out.stdout).trim();
}

let promtoolPath: Promise<string> | undefined;

/**
 * The path of promtool, built from hack/promtool/go.mod's pinned Prometheus
 * module on first use. A promtool on PATH is not used: the rules are checked
 * by the version the pin names.
 *
 * @example
 * ```ts ignore
 * const out = await new Deno.Command(await promtool(), { args: ["--version"] }).output();
 * ```
 */
export function promtool(): Promise<string> {
  promtoolPath ??= buildHackTool("promtool");
  return promtoolPath;
}

let prometheusOperatorCrdsPath: Promise<string> | undefined;

/**
 * The folder of the Prometheus operator's CustomResourceDefinitions
 * (`monitoring.coreos.com_servicemonitors.yaml`, ...), from the Go module
 * that hack/prometheus_operator/go.mod pins, fetched on first use.
 *
 * @example
 * ```ts ignore
 * const dir = await prometheusOperatorCrds();
 * console.log(`${dir}/monitoring.coreos.com_prometheusrules.yaml`);
 * ```
 */
export function prometheusOperatorCrds(): Promise<string> {
  prometheusOperatorCrdsPath ??= buildHackTool("prometheus_operator");
  return prometheusOperatorCrdsPath;
}
