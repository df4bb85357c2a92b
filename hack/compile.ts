/**
 * `deno task compile [--output DIR] [--target TRIPLE]`: compiles `evictor`
 * (main.ts, the operator) and `kubectl-evictor` (the kubectl plugin), each
 * with its permissions (and evictor with its V8 flags) from
 * app/permissions.ts, no prompt and no remote imports. Deno fetches its
 * `denort` runtime for that, or takes the file that `DENORT_BIN` names. Only
 * the npm packages an entry point imports are embedded
 * (`--exclude-unused-npm`), without the files that hack/npm_excludes.ts
 * shows no binary loads (declarations, source maps, unreachable modules).
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
import { npmExcludeFlags } from "./npm_excludes.ts";

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

const ROOT = new URL("../", import.meta.url);

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
    const excludes = await npmExcludeFlags(build.entry);
    const args = compileArgs(build, {
      output: values.output,
      ...(values.target ? { target: values.target } : {}),
      excludes: excludes.flags,
    });
    // The exclusions run to thousands of paths: counted, not listed.
    console.error(
      `deno ${
        args.filter((a) => !a.startsWith("--exclude=")).join(" ")
      } (and ${excludes.flags.length} --exclude flags: ${excludes.files} npm files left out)`,
    );
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
