/**
 * `deno task compile`, the build the Dockerfile runs, end to end except the
 * download of the `denort` runtime: `DENORT_BIN` names this Deno, so both
 * executables are really compiled (graph, type check, npm embedding) into a
 * temporary folder. Then each one's embedded metadata is read back
 * (tests/harness/compiled_binary.ts): its permissions and V8 flags are
 * exactly app/permissions.ts's, and it embeds exactly the npm packages its
 * entry point's code reaches, by `deno info`'s module graph.
 *
 * It cannot run the binaries: this Deno is not `denort`, and an executable
 * built on it starts as the plain `deno` CLI.
 */
import assert from "node:assert/strict";
import {
  COMPILE_LOCKDOWN_FLAGS,
  PERMISSION_FLAGS,
  PLUGIN_PERMISSION_FLAGS,
  V8_FLAGS,
} from "../app/permissions.ts";
import { readCompiledBinary } from "./harness/compiled_binary.ts";
import { makeOwnedTempDir } from "./harness/processes.ts";

const ROOT = new URL("../", import.meta.url);

/** What each executable must carry, from app/permissions.ts. */
const EXPECTED = [
  {
    name: "evictor",
    entry: "main.ts",
    permissions: [...PERMISSION_FLAGS, ...COMPILE_LOCKDOWN_FLAGS],
    v8Flags: V8_FLAGS,
  },
  {
    name: "kubectl-evictor",
    entry: "cli/kubectl_evictor.ts",
    permissions: [...PLUGIN_PERMISSION_FLAGS, ...COMPILE_LOCKDOWN_FLAGS],
    v8Flags: [],
  },
];

/**
 * Deno's own V8 flags before the user's (`construct_v8_flags` in
 * cli/lib/util/v8.rs: a placeholder argv[0], then `get_default_v8_flags` of
 * cli/args/mod.rs).
 */
const DENO_V8_FLAGS = [
  "UNUSED_BUT_NECESSARY_ARG0",
  "--stack-size=1024",
  "--inspector-live-edit",
  "--external-memory-max-reasonable-size=0",
];

/**
 * The `PermissionsOptions` fields (Deno's JSON names) that `flags` set:
 * `--allow-read=a,b` is `allow_read: ["a", "b"]`, `--allow-net` is
 * `allow_net: []` (everything), `--no-prompt` is `prompt: false`.
 */
function permissionFields(flags: readonly string[]): Record<string, unknown> {
  const fields: Record<string, unknown> = {};
  for (const flag of flags) {
    if (flag === "--no-prompt") {
      fields.prompt = false;
      continue;
    }
    if (flag === "--no-remote") continue; // checked at compile time only
    const m = flag.match(/^--(allow|deny)-([a-z]+)(?:=(.*))?$/);
    if (!m) throw new RangeError(`${flag}: not a permission flag`);
    fields[`${m[1]}_${m[2]}`] = m[3] === undefined ? [] : m[3].split(",");
  }
  return fields;
}

/** The part of `deno info --json` read here. */
interface DenoInfo {
  roots: string[];
  redirects: Record<string, string>;
  modules: {
    specifier: string;
    kind: string;
    npmPackage?: string;
    dependencies?: { code?: { specifier: string } }[];
  }[];
  npmPackages: Record<string, { dependencies: string[] }>;
}

/**
 * The npm packages (ids as the snapshot names them) that `entry`'s code
 * imports, with their dependencies: the module graph followed through code
 * imports only (a type-only import embeds nothing).
 */
async function npmPackagesOf(entry: string): Promise<string[]> {
  const out = await new Deno.Command(Deno.execPath(), {
    args: ["info", "--frozen", "--json", new URL(entry, ROOT).pathname],
    stdout: "piped",
    stderr: "piped",
  }).output();
  assert.equal(out.code, 0, new TextDecoder().decode(out.stderr));
  const info: DenoInfo = JSON.parse(new TextDecoder().decode(out.stdout));
  const modules = new Map(info.modules.map((m) => [m.specifier, m]));
  const seen = new Set<string>();
  const packages = new Set<string>();
  const addPackage = (id: string) => {
    if (packages.has(id)) return;
    packages.add(id);
    const pkg = info.npmPackages[id];
    if (!pkg) throw new Error(`deno info lists no npm package ${id}`);
    for (const dep of pkg.dependencies) addPackage(dep);
  };
  const queue = [...info.roots];
  for (let s = queue.pop(); s !== undefined; s = queue.pop()) {
    const specifier = info.redirects[s] ?? s;
    if (seen.has(specifier)) continue;
    seen.add(specifier);
    const module = modules.get(specifier);
    if (module?.npmPackage) addPackage(module.npmPackage);
    for (const dep of module?.dependencies ?? []) {
      if (dep.code) queue.push(dep.code.specifier);
    }
  }
  return [...packages].sort();
}

Deno.test("deno task compile builds both executables with exactly app/permissions.ts's permissions, V8 flags and npm packages", async () => {
  const tmp = await makeOwnedTempDir(
    Deno.env.get("TMPDIR") ?? "/tmp",
    "evictor-compile-",
  );
  const dir = `${tmp}/dist`;
  try {
    const started = Date.now();
    const out = await new Deno.Command(Deno.execPath(), {
      args: ["task", "compile", "--output", dir],
      cwd: ROOT,
      env: { DENORT_BIN: Deno.execPath(), NO_COLOR: "1" },
      stdin: "null",
      stdout: "piped",
      stderr: "piped",
    }).output();
    const log = new TextDecoder().decode(out.stderr);
    assert.equal(out.code, 0, `deno task compile failed:\n${log.slice(-4000)}`);
    // What was compiled, with which flags and how long it took, for CI's log.
    for (const line of log.split("\n")) {
      if (/^(deno compile |compile: )/.test(line)) console.log(line);
    }
    console.log(`compile: both executables in ${Date.now() - started} ms`);

    const built = [];
    for await (const entry of Deno.readDir(dir)) {
      if (entry.isFile) built.push(entry.name);
    }
    assert.deepEqual(built.sort(), EXPECTED.map((e) => e.name).sort());

    for (const expected of EXPECTED) {
      const path = `${dir}/${expected.name}`;
      const binary = await readCompiledBinary(path);
      const { metadata } = binary;
      assert.equal(metadata.entrypoint_key, expected.entry, expected.name);
      assert.deepEqual(
        metadata.v8_flags,
        [...DENO_V8_FLAGS, ...expected.v8Flags],
        `${expected.name}: V8 flags`,
      );
      // allow_import holds Deno's implicit list of trusted hosts, which no
      // flag removes; deny_import: [] (from --deny-import) overrides all of it.
      const { allow_import: _implicit, ...permissions } = metadata.permissions;
      const unset = Object.fromEntries(
        Object.keys(permissions).map((k) => [k, null]),
      );
      assert.deepEqual(
        permissions,
        { ...unset, ...permissionFields(expected.permissions) },
        `${expected.name}: permissions`,
      );

      const packages = await npmPackagesOf(expected.entry);
      assert.deepEqual(
        binary.npmPackages,
        packages,
        `${expected.name}: embedded npm packages`,
      );
      console.log(
        `${expected.name}: ${packages.length} npm packages: ${
          packages.join(" ")
        }`,
      );
    }
    const evictor = await readCompiledBinary(`${dir}/evictor`);
    for (const name of ["@kubernetes/client-node", "fast-check"]) {
      assert.ok(
        !evictor.npmPackages.some((id) => id.startsWith(`${name}@`)),
        `evictor embeds ${name}`,
      );
    }
  } finally {
    await Deno.remove(tmp, { recursive: true });
  }
});
