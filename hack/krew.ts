/**
 * The krew manifest of the kubectl plugin (plugins/krew/evictor.yaml):
 * `deno run --allow-read hack/krew.ts --archives DIR` prints it for a
 * release, with the sha256 of each platform's archive
 * (`kubectl-evictor_<os>_<arch>.tar.gz` in DIR, each holding the compiled
 * `kubectl-evictor` of `deno task compile --target ...`); without
 * `--archives` it prints the manifest the repository keeps, which has no
 * checksums until a release fills them in.
 *
 * @module
 */
import { parseArgs } from "node:util";
import { stringify as toYaml } from "yaml";
import { VERSION } from "../app/version.ts";

/** The platforms released, as krew names them, with deno's target. */
export const PLATFORMS: readonly {
  os: string;
  arch: string;
  target: string;
}[] = [
  { os: "linux", arch: "amd64", target: "x86_64-unknown-linux-gnu" },
  { os: "linux", arch: "arm64", target: "aarch64-unknown-linux-gnu" },
  { os: "darwin", arch: "amd64", target: "x86_64-apple-darwin" },
  { os: "darwin", arch: "arm64", target: "aarch64-apple-darwin" },
];

const RELEASES = "https://github.com/evictor/evictor/releases/download";

/**
 * The archive's file name for a platform.
 *
 * @example
 * ```ts
 * import { archiveName } from "./krew.ts";
 * console.assert(archiveName("linux", "amd64") === "kubectl-evictor_linux_amd64.tar.gz");
 * ```
 */
export function archiveName(os: string, arch: string): string {
  return `kubectl-evictor_${os}_${arch}.tar.gz`;
}

/**
 * The manifest for `version`, with the archives' checksums when known.
 *
 * @example
 * ```ts
 * import { krewManifest } from "./krew.ts";
 * console.assert(krewManifest("0.1.0").spec.version === "v0.1.0");
 * ```
 */
export function krewManifest(
  version: string,
  sha256?: ReadonlyMap<string, string>,
) {
  return {
    apiVersion: "krew.googlecontainertools.github.com/v1alpha2",
    kind: "Plugin",
    metadata: { name: "evictor" },
    spec: {
      version: `v${version}`,
      homepage: "https://github.com/evictor/evictor",
      shortDescription: "Drain OpenStack hypervisors with evictor",
      description:
        "Drains OpenStack hypervisors managed by the evictor operator: creates\n" +
        "Evictions as one wave and follows them (drain --wait, wait), shows them\n" +
        "with kubectl's outputs (status), previews a drain (plan) and re-arms\n" +
        "failed VMs (retry).\n",
      platforms: PLATFORMS.map(({ os, arch }) => {
        const name = archiveName(os, arch);
        const sum = sha256?.get(name);
        return {
          selector: { matchLabels: { os, arch } },
          uri: `${RELEASES}/v${version}/${name}`,
          ...(sum === undefined ? {} : { sha256: sum }),
          files: [{ from: "kubectl-evictor", to: "." }],
          bin: "kubectl-evictor",
        };
      }),
    },
  };
}

async function sha256Of(path: string): Promise<string> {
  const digest = await crypto.subtle.digest(
    "SHA-256",
    await Deno.readFile(path),
  );
  return [...new Uint8Array(digest)]
    .map((b) => b.toString(16).padStart(2, "0")).join("");
}

/**
 * The checksums of the archives in `dir`; a missing one is an error
 * naming it.
 *
 * @example
 * ```ts ignore
 * const sums = await archiveChecksums("dist");
 * ```
 */
export async function archiveChecksums(
  dir: string,
): Promise<Map<string, string>> {
  const sums = new Map<string, string>();
  for (const { os, arch } of PLATFORMS) {
    const name = archiveName(os, arch);
    try {
      sums.set(name, await sha256Of(`${dir}/${name}`));
    } catch (e) {
      if (e instanceof Deno.errors.NotFound) {
        throw new Error(`--archives: ${dir}/${name}: no such file`);
      }
      throw e;
    }
  }
  return sums;
}

/**
 * The manifest as YAML, with the header the repository's copy has.
 *
 * @example
 * ```ts
 * import { krewManifest, renderManifest } from "./krew.ts";
 * console.assert(renderManifest(krewManifest("0.1.0")).includes("kind: Plugin"));
 * ```
 */
export function renderManifest(manifest: ReturnType<typeof krewManifest>) {
  return `# The krew manifest of kubectl-evictor (written by hack/krew.ts; a release\n` +
    `# adds each archive's sha256: deno run --allow-read hack/krew.ts --archives DIR)\n` +
    toYaml(manifest, { indentSeq: false });
}

if (import.meta.main) {
  const { values } = parseArgs({ options: { archives: { type: "string" } } });
  const sums = values.archives === undefined
    ? undefined
    : await archiveChecksums(values.archives);
  console.log(renderManifest(krewManifest(VERSION, sums)).trimEnd());
}
