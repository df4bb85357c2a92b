import assert from "node:assert/strict";
import { readKubeconfigFile } from "./kubeconfig.ts";

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
      /no context named "zzz"/,
    );
    await assert.rejects(
      () => readKubeconfigFile(`${dir}/config`, "p"),
      /auth plugin/,
    );
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});
