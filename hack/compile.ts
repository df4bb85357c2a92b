/**
 * `deno task compile [--output DIR] [--target TRIPLE]`: compiles `evictor`
 * (main.ts, the operator) and `kubectl-evictor` (the kubectl plugin), each
 * with its permissions (and evictor with its V8 flags) from
 * app/permissions.ts. Deno fetches its `denort`
 * runtime for that, or takes the file that `DENORT_BIN` names. Only the npm
 * packages an entry point imports are embedded (`--exclude-unused-npm`).
 *
 * At run time the binary writes one thing: its V8 code cache,
 * `$TMPDIR/deno-compile-<name>.cache` (manifests/manager/deployment.yaml
 * mounts an emptyDir at /tmp for it).
 *
 * @module
 */
import { parseArgs } from "node:util";
import {
  PERMISSION_FLAGS,
  PLUGIN_PERMISSION_FLAGS,
  V8_FLAGS,
} from "../app/permissions.ts";

const { values } = parseArgs({
  args: Deno.args,
  options: {
    output: { type: "string", default: "dist" },
    target: { type: "string" },
  },
});
const builds = [
  {
    name: "evictor",
    entry: "../main.ts",
    permissions: PERMISSION_FLAGS,
    v8Flags: V8_FLAGS,
  },
  {
    name: "kubectl-evictor",
    entry: "../cli/kubectl_evictor.ts",
    permissions: PLUGIN_PERMISSION_FLAGS,
    v8Flags: [],
  },
];
for (const build of builds) {
  const args = [
    "compile",
    "--frozen",
    // Without it `deno compile` embeds every npm package of deno.lock
    // (fast-check and the benches' too), not only those main.ts reaches.
    "--exclude-unused-npm",
    ...build.permissions,
    ...(build.v8Flags.length > 0
      ? [`--v8-flags=${build.v8Flags.join(",")}`]
      : []),
    "--output",
    `${values.output}/${build.name}`,
    ...(values.target ? ["--target", values.target] : []),
    new URL(build.entry, import.meta.url).pathname,
  ];
  console.error(`deno ${args.join(" ")}`);
  const { code } = await new Deno.Command(Deno.execPath(), {
    args,
    stdout: "inherit",
    stderr: "inherit",
  }).output();
  if (code !== 0) Deno.exit(code);
}
