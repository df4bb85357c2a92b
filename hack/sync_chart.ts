/**
 * Copies the files that `charts/evictor/` carries from `manifests/`, so that
 * each has one source: the CRDs (Helm installs a chart's `crds/` folder as
 * it is, untemplated), and the alert rules and Grafana dashboard that the
 * chart's monitoring templates read with `.Files.Get` (a chart cannot read
 * files outside its folder).
 *
 * Usage: `deno task gen:chart` writes the copies; `--check` only compares and
 * exits 1 when one is stale (part of `deno task check`).
 *
 * @module
 */

const ROOT = new URL("../", import.meta.url);
const CHART = "charts/evictor/";

/** One file of the chart that is a byte-for-byte copy of one in manifests/. */
export interface ChartCopy {
  /** Path from the repository root, e.g. `manifests/crds/x.yaml`. */
  source: string;
  /** Path from the repository root, e.g. `charts/evictor/crds/x.yaml`. */
  target: string;
}

/**
 * Every copy the chart holds: each CRD of `manifests/crds/` into `crds/`,
 * and the PrometheusRule and dashboard of `manifests/monitoring/` into
 * `files/`.
 *
 * @example
 * ```ts ignore
 * for (const { source, target } of await chartCopies()) {
 *   console.log(`${source} -> ${target}`);
 * }
 * ```
 */
export async function chartCopies(): Promise<ChartCopy[]> {
  const copies: ChartCopy[] = [];
  for await (const entry of Deno.readDir(new URL("manifests/crds/", ROOT))) {
    if (!entry.isFile || !entry.name.endsWith(".yaml")) continue;
    copies.push({
      source: `manifests/crds/${entry.name}`,
      target: `${CHART}crds/${entry.name}`,
    });
  }
  for (const name of ["prometheus_rule.yaml", "evictor-dashboard.json"]) {
    copies.push({
      source: `manifests/monitoring/${name}`,
      target: `${CHART}files/${name}`,
    });
  }
  return copies.sort((a, b) => a.target.localeCompare(b.target));
}

/**
 * The chart's copied files that differ from their source, and the files in
 * the chart's copied folders (`crds/`, `files/`) that no source has.
 *
 * @example
 * ```ts ignore
 * const stale = await staleChartCopies();
 * if (stale.length > 0) console.error(`stale: ${stale.join(", ")}`);
 * ```
 */
export async function staleChartCopies(): Promise<string[]> {
  const copies = await chartCopies();
  const stale: string[] = [];
  for (const { source, target } of copies) {
    const [want, have] = await Promise.all([
      Deno.readFile(new URL(source, ROOT)),
      Deno.readFile(new URL(target, ROOT)).catch(() => undefined),
    ]);
    if (have === undefined || !sameBytes(want, have)) stale.push(target);
  }
  const targets = new Set(copies.map((c) => c.target));
  for (const folder of ["crds/", "files/"]) {
    const dir = new URL(`${CHART}${folder}`, ROOT);
    const entries = await Array.fromAsync(Deno.readDir(dir)).catch(() => []);
    for (const entry of entries) {
      const path = `${CHART}${folder}${entry.name}`;
      if (!targets.has(path)) stale.push(`${path} (no source)`);
    }
  }
  return stale;
}

function sameBytes(a: Uint8Array, b: Uint8Array): boolean {
  return a.length === b.length && a.every((byte, i) => byte === b[i]);
}

async function writeCopies(): Promise<void> {
  const copies = await chartCopies();
  for (const folder of ["crds/", "files/"]) {
    await Deno.mkdir(new URL(`${CHART}${folder}`, ROOT), { recursive: true });
  }
  for (const { source, target } of copies) {
    await Deno.copyFile(new URL(source, ROOT), new URL(target, ROOT));
  }
  for (const path of await staleChartCopies()) {
    // Only files without a source are left stale after copying.
    await Deno.remove(new URL(path.replace(/ \(no source\)$/, ""), ROOT));
  }
}

if (import.meta.main) {
  if (Deno.args.includes("--check")) {
    const stale = await staleChartCopies();
    if (stale.length > 0) {
      console.error(
        `charts/evictor/ is stale (${
          stale.join(", ")
        }): run \`deno task gen:chart\``,
      );
      Deno.exit(1);
    }
  } else {
    await writeCopies();
  }
}
