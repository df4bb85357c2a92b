/**
 * `deno task compile [--output DIR] [--target TRIPLE]`: compiles `evictor`
 * (main.ts, the operator) and `kubectl-evictor` (the kubectl plugin), each
 * with its permissions (and evictor with its V8 flags) from
 * app/permissions.ts, no prompt and no remote imports. Deno fetches its
 * `denort` runtime for that, or takes the file that `DENORT_BIN` names. Only
 * the npm packages an entry point imports are embedded
 * (`--exclude-unused-npm`), without the data files of {@linkcode NPM_EXCLUDES}.
 * tests/compile_test.ts runs this task and reads back what each binary
 * embeds.
 *
 * At run time the binary writes one thing: its V8 code cache,
 * `$TMPDIR/deno-compile-<name>.cache` (manifests/manager/deployment.yaml
 * mounts an emptyDir at /tmp for it).
 *
 * @module
 */
import { parseArgs } from "node:util";
import {
  COMPILE_LOCKDOWN_FLAGS,
  PERMISSION_FLAGS,
  PLUGIN_PERMISSION_FLAGS,
  V8_FLAGS,
} from "../app/permissions.ts";

/** One executable of the compile task. */
export interface Build {
  /** The output file's name. */
  name: string;
  /** The entry point, relative to the repository root. */
  entry: string;
  permissions: readonly string[];
  v8Flags: readonly string[];
}

/**
 * The executables `deno task compile` builds.
 *
 * @example
 * ```ts
 * import { BUILDS } from "./compile.ts";
 * console.assert(BUILDS.some((b) => b.name === "evictor"));
 * ```
 */
export const BUILDS: readonly Build[] = [
  {
    name: "evictor",
    entry: "main.ts",
    permissions: PERMISSION_FLAGS,
    v8Flags: V8_FLAGS,
  },
  {
    name: "kubectl-evictor",
    entry: "cli/kubectl_evictor.ts",
    permissions: PLUGIN_PERMISSION_FLAGS,
    v8Flags: [],
  },
];

/**
 * Files of npm packages that are kept out of the binaries. `deno compile`
 * embeds every file of an embedded package; Deno 2.9 overflows its stack on
 * bintrees' 2 MB test fixture `test/perf/100k` (reached through prom-client
 * -> tdigest, which prom-client's Summary uses; denoland/deno#36746), and no
 * package reads it at run time.
 *
 * @example
 * ```ts
 * import { NPM_EXCLUDES } from "./compile.ts";
 * console.assert(NPM_EXCLUDES.every((e) => !e.file.startsWith("/")));
 * ```
 */
export const NPM_EXCLUDES: readonly { pkg: string; file: string }[] = [
  { pkg: "bintrees", file: "test/perf/100k" },
];

const ROOT = new URL("../", import.meta.url);

/** The part of `deno info --json` this task reads. */
interface DenoInfo {
  npmPackages: Record<string, { name: string; localPath?: string }>;
}

/**
 * The `--exclude=PATH` flags for {@linkcode NPM_EXCLUDES}: the files in the
 * npm cache where `deno info` (which fills that cache) puts the packages of
 * `entry`'s graph. The exclusion matches paths exactly, so each is resolved
 * through symlinks as Deno's embedding walk resolves them.
 *
 * @example
 * ```ts ignore
 * console.log(await npmExcludeFlags("main.ts"));
 * // ["--exclude=/root/.cache/deno/npm/registry.npmjs.org/bintrees/1.0.2/test/perf/100k"]
 * ```
 */
export async function npmExcludeFlags(entry: string): Promise<string[]> {
  const out = await new Deno.Command(Deno.execPath(), {
    args: ["info", "--frozen", "--json", new URL(entry, ROOT).pathname],
    cwd: ROOT,
    stdout: "piped",
    stderr: "inherit",
  }).output();
  if (!out.success) {
    throw new Error(`deno info ${entry} failed with exit code ${out.code}`);
  }
  const info: DenoInfo = JSON.parse(new TextDecoder().decode(out.stdout));
  const flags: string[] = [];
  for (const { pkg, file } of NPM_EXCLUDES) {
    for (const [id, found] of Object.entries(info.npmPackages)) {
      if (found.name !== pkg) continue;
      if (found.localPath === undefined) {
        throw new Error(`deno info names no folder for npm package ${id}`);
      }
      const path = `${found.localPath}/${file}`;
      const real = await Deno.realPath(path).catch(() => undefined);
      if (real === undefined) {
        throw new Error(
          `${path} is missing: NPM_EXCLUDES in hack/compile.ts names ${pkg}'s ${file}, which ${id} does not have; drop or correct the entry`,
        );
      }
      flags.push(`--exclude=${real}`);
    }
  }
  return flags;
}

/**
 * The `deno compile` arguments of one build.
 *
 * @example
 * ```ts
 * import { BUILDS, compileArgs } from "./compile.ts";
 * const args = compileArgs(BUILDS[0]!, { output: "dist", excludes: [] });
 * console.assert(args.includes("--no-remote"));
 * ```
 */
export function compileArgs(
  build: Build,
  options: { output: string; target?: string; excludes: readonly string[] },
): string[] {
  return [
    "compile",
    "--frozen",
    ...COMPILE_LOCKDOWN_FLAGS,
    // Without it `deno compile` embeds every npm package of deno.lock
    // (fast-check and the benches' too), not only those the entry reaches.
    "--exclude-unused-npm",
    ...options.excludes,
    ...build.permissions,
    ...(build.v8Flags.length > 0
      ? [`--v8-flags=${build.v8Flags.join(",")}`]
      : []),
    "--output",
    `${options.output}/${build.name}`,
    ...(options.target ? ["--target", options.target] : []),
    new URL(build.entry, ROOT).pathname,
  ];
}

if (import.meta.main) {
  const { values } = parseArgs({
    args: Deno.args,
    options: {
      output: { type: "string", default: "dist" },
      target: { type: "string" },
    },
  });
  for (const build of BUILDS) {
    const args = compileArgs(build, {
      output: values.output,
      ...(values.target ? { target: values.target } : {}),
      excludes: await npmExcludeFlags(build.entry),
    });
    console.error(`deno ${args.join(" ")}`);
    const started = Date.now();
    const { code } = await new Deno.Command(Deno.execPath(), {
      args,
      stdout: "inherit",
      stderr: "inherit",
    }).output();
    if (code !== 0) Deno.exit(code);
    console.error(
      `compile: ${values.output}/${build.name} in ${Date.now() - started} ms`,
    );
  }
}
