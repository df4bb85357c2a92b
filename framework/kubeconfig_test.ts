import assert from "node:assert/strict";
import fc from "fast-check";
import { envtestBinDir } from "../tests/harness/envtest.ts";
import {
  kubeconfigDocument,
  kubeconfigPathsFromEnv,
  mergeKubeconfigs,
  readKubeconfigFile,
  readKubeconfigFiles,
  selectContext,
} from "./kubeconfig.ts";

Deno.test("kubeconfig: reads data and file references of the current or a named context", async () => {
  const dir = await Deno.makeTempDir();
  try {
    await Deno.writeTextFile(`${dir}/ca.pem`, "CA-PEM");
    await Deno.writeTextFile(
      `${dir}/config`,
      JSON.stringify({
        apiVersion: "v1",
        kind: "Config",
        clusters: [{
          name: "c",
          cluster: {
            server: "https://k:6443",
            "certificate-authority": "ca.pem",
          },
        }],
        users: [
          {
            name: "certs",
            user: {
              "client-certificate-data": btoa("CERT"),
              "client-key-data": btoa("KEY"),
            },
          },
          { name: "tok", user: { token: "t0k" } },
          { name: "plugin", user: { exec: { command: "x" } } },
        ],
        contexts: [
          { name: "a", context: { cluster: "c", user: "certs" } },
          { name: "b", context: { cluster: "c", user: "tok" } },
          { name: "p", context: { cluster: "c", user: "plugin" } },
        ],
        "current-context": "a",
      }),
    );
    const a = await readKubeconfigFile(`${dir}/config`);
    assert.deepEqual(a, {
      server: "https://k:6443",
      caPem: "CA-PEM",
      certPem: "CERT",
      keyPem: "KEY",
      token: undefined,
      tokenFile: undefined,
    });
    assert.equal((await readKubeconfigFile(`${dir}/config`, "b")).token, "t0k");
    await assert.rejects(
      () => readKubeconfigFile(`${dir}/config`, "zzz"),
      /context "zzz" is not in kubeconfig .*expected one of: a, b, p/,
    );
    await assert.rejects(
      () => readKubeconfigFile(`${dir}/config`, "p"),
      /auth plugin/,
    );
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});

Deno.test("mergeKubeconfigs: first file wins per name, current-context from the first that sets it, paths relative to their file", () => {
  const m = mergeKubeconfigs([
    {
      path: "/a/config",
      doc: {
        clusters: [{
          name: "c",
          cluster: { server: "https://a", "certificate-authority": "ca.pem" },
        }],
        users: [{ name: "u", user: { "client-certificate": "/abs/cert" } }],
        contexts: [{ name: "x", context: { cluster: "c", user: "u" } }],
      },
    },
    {
      path: "/b/sub/config",
      doc: {
        "current-context": "y",
        clusters: [
          { name: "c", cluster: { server: "https://b" } },
          { name: "d", cluster: { server: "https://d" } },
        ],
        users: [{
          name: "v",
          user: {
            "client-key": "k.pem",
            tokenFile: "../tok",
            exec: { command: "bin/get-token" },
          },
        }, { name: "w", user: { exec: { command: "kubelogin" } } }],
        contexts: [
          { name: "x", context: { cluster: "d" } },
          { name: "y", context: { cluster: "d", user: "v" } },
        ],
      },
    },
    { path: "/c/config", doc: { "current-context": "x" } },
  ]);
  assert.equal(m.currentContext, "y");
  assert.deepEqual(m.clusters, [
    {
      name: "c",
      cluster: { server: "https://a", "certificate-authority": "/a/ca.pem" },
    },
    { name: "d", cluster: { server: "https://d" } },
  ]);
  assert.deepEqual(m.contexts.map((c) => c.context), [
    { cluster: "c", user: "u" },
    { cluster: "d", user: "v" },
  ]);
  assert.deepEqual(m.users[1], {
    name: "v",
    user: {
      "client-key": "/b/sub/k.pem",
      tokenFile: "/b/sub/../tok",
      exec: { command: "/b/sub/bin/get-token" },
    },
  });
  // (kubectl config view prints paths relative again, so the differential
  // test below uses absolute ones.) A bare command is looked up on PATH, not next to the file
  assert.deepEqual(m.users[2]?.user, { exec: { command: "kubelogin" } });
  assert.equal(selectContext(m), "y");
  assert.equal(selectContext(m, "x"), "x");
  assert.throws(
    () => selectContext(m, "nope"),
    /context "nope" is not in kubeconfig \/a\/config:\/b\/sub\/config:\/c\/config; expected one of: x, y/,
  );
  assert.throws(
    () => selectContext(mergeKubeconfigs([{ path: "/e", doc: {} }])),
    /kubeconfig \/e has no current-context; expected one of: \(none\)/,
  );
});

Deno.test("kubeconfigPathsFromEnv: colon-separated, empty entries dropped", () => {
  assert.deepEqual(kubeconfigPathsFromEnv(undefined), []);
  assert.deepEqual(kubeconfigPathsFromEnv(""), []);
  assert.deepEqual(kubeconfigPathsFromEnv("/a::/b:/a:"), ["/a", "/b"]);
});

Deno.test("readKubeconfigFiles: merges the files that exist; none is an error naming them", async () => {
  const dir = await Deno.makeTempDir();
  try {
    await Deno.writeTextFile(
      `${dir}/one`,
      JSON.stringify({
        clusters: [{ name: "c", cluster: { server: "https://one" } }],
        contexts: [{ name: "a", context: { cluster: "c" } }],
      }),
    );
    await Deno.writeTextFile(
      `${dir}/two`,
      JSON.stringify({
        "current-context": "b",
        clusters: [
          { name: "c", cluster: { server: "https://two" } },
          { name: "e", cluster: { server: "https://e" } },
        ],
        users: [{ name: "t", user: { tokenFile: "tok" } }],
        contexts: [{ name: "b", context: { cluster: "e", user: "t" } }],
      }),
    );
    const paths = [`${dir}/one`, `${dir}/missing`, `${dir}/two`];
    const b = await readKubeconfigFiles(paths);
    assert.equal(b.server, "https://e");
    assert.equal(b.tokenFile, `${dir}/tok`);
    assert.equal((await readKubeconfigFiles(paths, "a")).server, "https://one");
    await assert.rejects(
      () => readKubeconfigFiles([`${dir}/missing`]),
      /kubeconfig .*missing: no such file; expected a kubeconfig file/,
    );
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});

/** Names that overlap across files so that precedence matters. */
const kubeconfigFile = fc.record({
  current: fc.option(fc.constantFrom("a", "b", "c"), { nil: undefined }),
  clusters: fc.uniqueArray(fc.constantFrom("k1", "k2", "k3"), {
    maxLength: 3,
  }),
  users: fc.uniqueArray(fc.constantFrom("u1", "u2"), { maxLength: 2 }),
  contexts: fc.uniqueArray(fc.constantFrom("a", "b", "c"), { maxLength: 3 }),
});

Deno.test("mergeKubeconfigs agrees with the real kubectl on KUBECONFIG=f0:f1:f2", async () => {
  const kubectl = `${await envtestBinDir()}/kubectl`;
  const dir = await Deno.makeTempDir();
  try {
    await fc.assert(
      fc.asyncProperty(
        fc.array(kubeconfigFile, { minLength: 1, maxLength: 3 }),
        async (specs) => {
          const files = specs.map((spec, i) => ({
            path: `${dir}/f${i}`,
            doc: {
              apiVersion: "v1",
              kind: "Config",
              ...(spec.current === undefined
                ? {}
                : { "current-context": spec.current }),
              clusters: spec.clusters.map((name) => ({
                name,
                cluster: {
                  server: `https://${name}.f${i}:6443`,
                  "certificate-authority": `/etc/ca-${i}.pem`,
                },
              })),
              users: spec.users.map((name) => ({
                name,
                user: { token: `${name}-f${i}`, "client-key": `/etc/key-${i}` },
              })),
              contexts: spec.contexts.map((name) => ({
                name,
                context: { cluster: `k${i + 1}`, user: "u1" },
              })),
            },
          }));
          for (const f of files) {
            await Deno.writeTextFile(f.path, JSON.stringify(f.doc));
          }
          const out = await new Deno.Command(kubectl, {
            args: ["config", "view", "--raw", "-o", "json"],
            env: { KUBECONFIG: files.map((f) => f.path).join(":") },
            clearEnv: true,
            stdout: "piped",
            stderr: "piped",
          }).output();
          assert.ok(out.success, new TextDecoder().decode(out.stderr));
          const theirs = JSON.parse(new TextDecoder().decode(out.stdout));
          const ours = kubeconfigDocument(mergeKubeconfigs(files));
          const byName = (list: unknown) =>
            Object.fromEntries(
              ((list ?? []) as { name: string }[]).map((e) => [e.name, e]),
            );
          assert.equal(
            ours["current-context"] ?? "",
            theirs["current-context"] ?? "",
          );
          for (const key of ["clusters", "users", "contexts"]) {
            assert.deepEqual(
              byName(ours[key]),
              byName(theirs[key]),
              `${key} differ`,
            );
          }
        },
      ),
      { numRuns: 25 },
    );
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});
