/**
 * `deno task compile`, the build the Dockerfile runs, end to end except the
 * download of the `denort` runtime: `DENORT_BIN` names this Deno, so both
 * executables are really compiled (graph, type check, npm embedding) into a
 * temporary folder. Then each one's embedded data is read back
 * (tests/harness/compiled_binary.ts): its permissions and V8 flags are
 * exactly app/permissions.ts's, it embeds exactly the npm packages its
 * entry point's code reaches, by `deno info`'s module graph, and its payload
 * (what `deno compile` appends to the runtime) is printed, the plugin's
 * bounded by {@linkcode PLUGIN_PAYLOAD_LIMIT}.
 *
 * It cannot run the binaries: this Deno is not `denort`, and an executable
 * built on it starts as the plain `deno` CLI. So the plugin's payload is laid
 * out as a project folder and an npm cache and run with `deno run
 * --cached-only`: a module the compile step left out fails it. Run so, the
 * plugin logs in to the real API server through a kubeconfig user's `exec`
 * credential plugin and through its `oidc` auth provider.
 */
import assert from "node:assert/strict";
import {
  COMPILE_LOCKDOWN_FLAGS,
  PERMISSION_FLAGS,
  PLUGIN_PERMISSION_FLAGS,
  V8_FLAGS,
} from "../app/permissions.ts";
import { denoInfo, npmPackagesOf } from "../hack/npm_excludes.ts";
import {
  type CompiledBinary,
  EMBEDDED_NPM_DIR,
  layOutPayload,
  readCompiledBinary,
} from "./harness/compiled_binary.ts";
import { type Envtest, sharedEnvtest } from "./harness/envtest.ts";
import { makeOwnedTempDir, waitFor } from "./harness/processes.ts";

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

/**
 * The most the plugin's payload may weigh, in bytes: it was 81 MB while it
 * carried all of client-node (31 MB of declarations and source maps).
 */
const PLUGIN_PAYLOAD_LIMIT = 40_000_000;

const mb = (bytes: number) => `${(bytes / 1e6).toFixed(1)} MB`;

Deno.test("deno task compile builds both executables with exactly app/permissions.ts's permissions, V8 flags and npm packages, the plugin's payload within bounds and able to log in", async (t) => {
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
    const binaries = new Map<string, CompiledBinary>();
    for (const { name } of EXPECTED) {
      binaries.set(name, await readCompiledBinary(`${dir}/${name}`));
    }

    await t.step("permissions, V8 flags and npm packages", async () => {
      for (const expected of EXPECTED) {
        const binary = binaries.get(expected.name)!;
        const { metadata } = binary;
        assert.equal(metadata.entrypoint_key, expected.entry, expected.name);
        assert.deepEqual(
          metadata.v8_flags,
          [...DENO_V8_FLAGS, ...expected.v8Flags],
          `${expected.name}: V8 flags`,
        );
        // allow_import holds Deno's implicit list of trusted hosts, which no
        // flag removes; deny_import: [] (from --deny-import) overrides all of it.
        const { allow_import: _implicit, ...permissions } =
          metadata.permissions;
        const unset = Object.fromEntries(
          Object.keys(permissions).map((k) => [k, null]),
        );
        assert.deepEqual(
          permissions,
          { ...unset, ...permissionFields(expected.permissions) },
          `${expected.name}: permissions`,
        );

        const packages = npmPackagesOf(
          await denoInfo(new URL(expected.entry, ROOT).pathname),
        );
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
      const evictor = binaries.get("evictor")!;
      for (const name of ["@kubernetes/client-node", "fast-check"]) {
        assert.ok(
          !evictor.npmPackages.some((id) => id.startsWith(`${name}@`)),
          `evictor embeds ${name}`,
        );
      }
    });

    await t.step(
      `payloads: the plugin's at most ${mb(PLUGIN_PAYLOAD_LIMIT)}`,
      async () => {
        for (const { name } of EXPECTED) {
          const binary = binaries.get(name)!;
          const { size } = await Deno.stat(`${dir}/${name}`);
          let files = 0;
          for (const bytes of binary.files.values()) files += bytes.length;
          console.log(
            `${name}: payload ${
              mb(binary.payloadBytes)
            } (${binary.files.size} files, ${mb(files)}), executable ${
              mb(size)
            }`,
          );
        }
        const plugin = binaries.get("kubectl-evictor")!;
        assert.ok(
          plugin.payloadBytes <= PLUGIN_PAYLOAD_LIMIT,
          `kubectl-evictor's payload is ${
            mb(plugin.payloadBytes)
          }, expected at most ${mb(PLUGIN_PAYLOAD_LIMIT)}; its largest files: ${
            largest(plugin, 8)
          }`,
        );
        // The authenticators of kubeconfig users stay in (client-node loads
        // them with its KubeConfig; the run below shows they load).
        const clientNode = packageDir(plugin, "@kubernetes/client-node");
        for (const file of ["dist/exec_auth.js", "dist/oidc_auth.js"]) {
          assert.ok(plugin.files.has(`${clientNode}/${file}`), file);
        }
        packageDir(plugin, "openid-client");
      },
    );

    await t.step(
      "the plugin run from its payload logs in through exec and oidc users",
      async () => {
        const plugin = binaries.get("kubectl-evictor")!;
        const { src, denoDir } = await layOutPayload(plugin, `${tmp}/payload`);
        // The binary resolves npm packages from its snapshot; `deno run` needs
        // the lockfile for that.
        await Deno.copyFile(new URL("deno.lock", ROOT), `${src}/deno.lock`);
        const api = await sharedEnvtest();
        const token = await serviceAccountToken(api);
        const kubeconfig = await loginKubeconfig(api, `${tmp}/login`, token);
        const run = async (context: string) => {
          const out = await new Deno.Command(Deno.execPath(), {
            args: [
              "run",
              "--quiet",
              "--frozen",
              "--cached-only",
              // Only what the payload carries: not every package of deno.lock.
              "--unstable-npm-lazy-caching",
              ...PLUGIN_PERMISSION_FLAGS,
              `${src}/${plugin.metadata.entrypoint_key}`,
              "status",
              "-o",
              "json",
              "--kubeconfig",
              kubeconfig,
              "--context",
              context,
            ],
            cwd: src,
            env: { DENO_DIR: denoDir, HOME: tmp, NO_COLOR: "1" },
            clearEnv: true,
            stdin: "null",
            stdout: "piped",
            stderr: "piped",
          }).output();
          const d = new TextDecoder();
          return {
            code: out.code,
            stdout: d.decode(out.stdout),
            stderr: d.decode(out.stderr),
          };
        };
        for (const context of ["exec", "oidc"]) {
          const ok = await run(context);
          assert.equal(ok.code, 0, `${context}: ${ok.stderr}`);
          assert.ok(
            Array.isArray(JSON.parse(ok.stdout).items),
            `${context}: ${ok.stdout}`,
          );
        }
        // The same exec plugin printing a token the API server does not know:
        // the login above was the plugin's token, not some other credential.
        const refused = await run("exec-bad-token");
        assert.equal(refused.code, 1, refused.stderr);
        // 401 with no Status body: the plugin names the code
        assert.match(refused.stderr, /^error: the API server answered 401\s*$/);
      },
    );
  } finally {
    await Deno.remove(tmp, { recursive: true });
  }
});

/** The folder of npm package `name` in `binary`'s payload, failing when absent. */
function packageDir(binary: CompiledBinary, name: string): string {
  const id = binary.npmPackages.find((p) => p.startsWith(`${name}@`));
  assert.ok(id, `the payload carries no ${name}`);
  return `${EMBEDDED_NPM_DIR}/${name}/${id.slice(name.length + 1)}`;
}

/** The `n` largest embedded files, for a failure message. */
function largest(binary: CompiledBinary, n: number): string {
  return [...binary.files].sort((a, b) => b[1].length - a[1].length)
    .slice(0, n).map(([path, bytes]) => `${path} (${mb(bytes.length)})`)
    .join(", ");
}

/**
 * A token of a new ServiceAccount allowed to read Evictions: what an exec
 * credential plugin or an OIDC provider would hand out.
 */
async function serviceAccountToken(api: Envtest): Promise<string> {
  const ns = `compile-login-${crypto.randomUUID().slice(0, 8)}`;
  const steps = [
    ["create", "namespace", ns],
    ["-n", ns, "create", "serviceaccount", "plugin-user"],
    [
      "create",
      "clusterrole",
      `${ns}-reader`,
      "--verb=get,list",
      "--resource=evictions.kvm.cloud.sap",
    ],
    [
      "create",
      "clusterrolebinding",
      `${ns}-reader`,
      `--clusterrole=${ns}-reader`,
      `--serviceaccount=${ns}:plugin-user`,
    ],
  ];
  for (const args of steps) {
    const out = await api.kubectl(args);
    assert.equal(out.code, 0, `kubectl ${args.join(" ")}: ${out.stderr}`);
  }
  // A freshly started API server answers 503 ("storage is (re)initializing")
  // for a CRD's objects for a while after the CRD is established.
  await waitFor(
    "Evictions to be served",
    async () => (await api.kubectl(["get", "evictions"])).code === 0,
    Date.now() + 120_000,
  );
  const out = await api.kubectl([
    "-n",
    ns,
    "create",
    "token",
    "plugin-user",
    "--duration=10m",
  ]);
  assert.equal(out.code, 0, out.stderr);
  return out.stdout.trim();
}

/**
 * A kubeconfig with three contexts on `api`'s server: `exec` (a credential
 * plugin script printing an ExecCredential with `token`), `exec-bad-token`
 * (the same with a token nobody issued) and `oidc` (`token` as the id-token
 * of an oidc auth provider; it is not expired, so no refresh happens).
 */
async function loginKubeconfig(
  api: Envtest,
  dir: string,
  token: string,
): Promise<string> {
  await Deno.mkdir(dir, { recursive: true });
  const credential = (t: string) =>
    JSON.stringify({
      apiVersion: "client.authentication.k8s.io/v1",
      kind: "ExecCredential",
      status: { token: t },
    });
  const script = async (name: string, t: string) => {
    const path = `${dir}/${name}`;
    await Deno.writeTextFile(path, `#!/bin/sh\necho '${credential(t)}'\n`);
    await Deno.chmod(path, 0o755);
    return path;
  };
  const exec = (command: string) => ({
    exec: {
      apiVersion: "client.authentication.k8s.io/v1",
      command,
      interactiveMode: "Never",
    },
  });
  const users = [
    { name: "exec", user: exec(await script("good-token", token)) },
    {
      name: "exec-bad-token",
      user: exec(await script("bad-token", "not-a-token-anyone-issued")),
    },
    {
      name: "oidc",
      user: {
        "auth-provider": {
          name: "oidc",
          config: {
            "client-id": "evictor",
            "id-token": token,
            "idp-issuer-url": "https://127.0.0.1:1",
          },
        },
      },
    },
  ];
  const kubeconfig = {
    apiVersion: "v1",
    kind: "Config",
    clusters: [{
      name: "envtest",
      cluster: {
        server: api.server,
        "certificate-authority-data": btoa(api.caCertPem),
      },
    }],
    users,
    contexts: users.map(({ name }) => ({
      name,
      context: { cluster: "envtest", user: name },
    })),
    "current-context": "exec",
  };
  const path = `${dir}/kubeconfig`;
  await Deno.writeTextFile(path, JSON.stringify(kubeconfig));
  return path;
}
