/**
 * What a deployment relies on, against a dedicated real API server:
 * the manifests apply (server-side dry run), the operator holding only the
 * manifests' RBAC completes a drain as a separate process with exactly the
 * compiled binary's permissions, and what it must not do is refused.
 */
import assert from "node:assert/strict";
import { parse } from "yaml";
import { PERMISSION_FLAGS } from "../app/permissions.ts";
import {
  applyCrdFiles,
  type Envtest,
  startEnvtest,
} from "./harness/envtest.ts";
import { startNovaSim } from "./harness/nova_sim/mod.ts";
import {
  operatorLogTail,
  STAGING_ROOT,
  startOperatorProcess,
  toolchainEnv,
} from "./harness/operator_process.ts";
import { freePort, makeOwnedTempDir } from "./harness/processes.ts";

const ROOT = new URL("../", import.meta.url);
const SA_USER = "system:serviceaccount:evictor-system:evictor";
const SA_GROUPS = [
  "system:serviceaccounts",
  "system:serviceaccounts:evictor-system",
  "system:authenticated",
];

let envPromise: Promise<Envtest> | undefined;
/** One dedicated API server for this file: it installs cluster-wide RBAC. */
function env(): Promise<Envtest> {
  envPromise ??= (async () => {
    const e = await startEnvtest();
    await applyCrdFiles(e, [
      new URL("tests/testdata/cert_manager_crds.yaml", ROOT).pathname,
      new URL("manifests/namespace.yaml", ROOT).pathname,
    ], ["issuers.cert-manager.io", "certificates.cert-manager.io"]);
    return e;
  })();
  return envPromise;
}

async function waitUntil<T>(
  what: string,
  probe: () => Promise<T | undefined>,
  ms = 60_000,
): Promise<T> {
  const deadline = Date.now() + ms;
  for (;;) {
    const value = await probe().catch((e) => {
      if (e instanceof Error && e.message.startsWith("evictor exited")) throw e;
      return undefined;
    });
    if (value !== undefined) return value;
    if (Date.now() > deadline) assert.fail(`timed out waiting: ${what}`);
    await new Promise((r) => setTimeout(r, 200));
  }
}

/** What this file reads of `kubectl kustomize manifests/monitoring`. */
interface MonitoringObject {
  kind: string;
  spec?: {
    endpoints?: {
      authorization?: {
        type?: string;
        credentials?: { name: string; key: string };
      };
    }[];
  };
}

/**
 * What kube-controller-manager's token controller does for a Secret of type
 * `kubernetes.io/service-account-token` (envtest runs no controller
 * manager): writes a token of the annotated ServiceAccount into `token`,
 * valid while the Secret exists (a token bound to the Secret). Returns it.
 */
async function fillTokenSecret(
  e: Envtest,
  namespace: string,
  secret: string,
): Promise<string> {
  const run = async (args: string[], stdin?: string) => {
    const out = await e.kubectl(
      ["-n", namespace, ...args],
      stdin === undefined ? {} : { stdin },
    );
    assert.equal(out.code, 0, `kubectl ${args.join(" ")}: ${out.stderr}`);
    return out.stdout.trim();
  };
  const account = await run([
    "get",
    "secret",
    secret,
    "-o",
    "jsonpath={.metadata.annotations.kubernetes\\.io/service-account\\.name}",
  ]);
  assert.ok(account !== "", `secret ${secret} names no ServiceAccount`);
  const token = await run([
    "create",
    "token",
    account,
    "--bound-object-kind=Secret",
    `--bound-object-name=${secret}`,
    "--duration=1h",
  ]);
  await run([
    "patch",
    "secret",
    secret,
    "--type=merge",
    "-p",
    JSON.stringify({ data: { token: btoa(token) } }),
  ]);
  return token;
}

/**
 * The operator's /metrics (secured by default) is HTTPS only, refuses a
 * scrape without a token and one whose ServiceAccount is not bound to
 * evictor-metrics-reader (the API server's TokenReview and
 * SubjectAccessReview decide), and answers the ServiceMonitor's own
 * credentials (manifests/monitoring: the scraper's account, its token
 * Secret and its binding, applied here without the Prometheus operator's
 * kinds); the probes stay open on their own plain-HTTP port.
 */
async function metricsNeedAnAuthorizedToken(
  e: Envtest,
  metricsPort: number,
  probePort: number,
) {
  const client = Deno.createHttpClient({ caCerts: [e.caCertPem] });
  const get = async (path: string, token?: string) => {
    const res = await fetch(`https://localhost:${metricsPort}${path}`, {
      headers: token === undefined ? {} : { authorization: `Bearer ${token}` },
      client,
    });
    return { status: res.status, text: await res.text() };
  };
  const probe = async (path: string) => {
    const res = await fetch(`http://127.0.0.1:${probePort}${path}`);
    await res.body?.cancel();
    return res.status;
  };
  const kubectl = async (args: string[], stdin?: string) => {
    const out = await e.kubectl(args, stdin === undefined ? {} : { stdin });
    assert.equal(out.code, 0, `kubectl ${args.join(" ")}: ${out.stderr}`);
    return out.stdout.trim();
  };
  await kubectl([
    "-n",
    "evictor-system",
    "create",
    "serviceaccount",
    "stranger",
  ]);
  const monitoring = (await kubectl([
    "kustomize",
    new URL("manifests/monitoring", ROOT).pathname,
  ])).split(/^---$/m).map((d) => parse(d) as MonitoringObject);
  const endpoint = monitoring.find((o) => o.kind === "ServiceMonitor")?.spec
    ?.endpoints?.[0];
  assert.equal(endpoint?.authorization?.type, "Bearer");
  const credentials = endpoint?.authorization?.credentials;
  assert.ok(credentials !== undefined, "the ServiceMonitor sends no token");
  // The scraper's account, token Secret and binding (the cluster has no
  // Prometheus operator kinds).
  const accounts = monitoring.filter((o) =>
    ["ServiceAccount", "Secret", "ClusterRoleBinding"].includes(o.kind)
  );
  assert.equal(accounts.length, 3, accounts.map((o) => o.kind).join());
  await kubectl(
    ["apply", "-f", "-"],
    JSON.stringify({ apiVersion: "v1", kind: "List", items: accounts }),
  );
  const filled = await fillTokenSecret(e, "evictor-system", credentials.name);
  // What Prometheus reads: the key the ServiceMonitor names.
  const secretKey = atob(
    await kubectl([
      "-n",
      "evictor-system",
      "get",
      "secret",
      credentials.name,
      "-o",
      `jsonpath={.data.${credentials.key}}`,
    ]),
  );
  assert.equal(secretKey, filled);
  const token = (sa: string) =>
    sa === "scraper"
      ? Promise.resolve(secretKey)
      : kubectl(["-n", "evictor-system", "create", "token", sa]);

  const anonymous = await get("/metrics");
  assert.equal(anonymous.status, 401, anonymous.text);
  assert.doesNotMatch(anonymous.text, /evictor_/);
  assert.equal((await get("/metrics", "not-a-token")).status, 401);
  const stranger = await get("/metrics", await token("stranger"));
  assert.equal(stranger.status, 403, stranger.text);
  assert.doesNotMatch(stranger.text, /evictor_/);
  const scraper = await get("/metrics", await token("scraper"));
  assert.equal(scraper.status, 200, scraper.text);
  assert.match(scraper.text, /^evictor_/m);
  // plain HTTP to the metrics port gets no answer, with or without a token
  await assert.rejects(
    fetch(`http://127.0.0.1:${metricsPort}/metrics`, {
      headers: { authorization: `Bearer ${await token("scraper")}` },
    }),
  );
  client.close();
  assert.equal(await probe("/healthz"), 200);
  assert.equal(await probe("/readyz"), 200);
}

Deno.test("kubectl apply --dry-run=server -k manifests/ succeeds", async () => {
  const e = await env();
  const out = await e.kubectl([
    "apply",
    "--dry-run=server",
    "-k",
    new URL("manifests", ROOT).pathname,
  ]);
  assert.equal(out.code, 0, out.stderr);
  for (
    const kind of [
      "customresourcedefinition.apiextensions.k8s.io/evictions.kvm.cloud.sap",
      "deployment.apps/evictor",
      "validatingwebhookconfiguration.admissionregistration.k8s.io/evictor",
      "certificate.cert-manager.io/evictor-webhook",
      "poddisruptionbudget.policy/evictor",
      "clusterrole.rbac.authorization.k8s.io/evictor",
    ]
  ) {
    assert.match(
      out.stdout,
      new RegExp(`${kind.replaceAll(".", "\\.")} .*\\(server dry run\\)`),
    );
  }
});

Deno.test("the operator with only the manifests' RBAC and the binary's permissions drains a host", async () => {
  const e = await env();
  const rbac = await e.kubectl([
    "apply",
    "-f",
    new URL("manifests/rbac", ROOT).pathname,
  ]);
  assert.equal(rbac.code, 0, rbac.stderr);
  const saKubeconfig = await e.kubeconfigFor(SA_USER, SA_GROUPS);

  // What it must not do.
  for (
    const [verb, resource] of [
      ["list", "secrets"],
      ["create", "validatingwebhookconfigurations"],
      ["delete", "customresourcedefinitions"],
      ["create", "events"],
      ["delete", "leases"],
    ]
  ) {
    const can = await e.kubectl([
      "auth",
      "can-i",
      verb ?? "",
      resource ?? "",
      "-A",
    ], {
      kubeconfig: saKubeconfig,
    });
    assert.equal(can.stdout.trim(), "no", `${verb} ${resource}: ${can.stdout}`);
  }
  const secrets = await e.kubectl(["get", "secrets", "-A"], {
    kubeconfig: saKubeconfig,
  });
  assert.notEqual(secrets.code, 0);
  assert.match(secrets.stderr, /forbidden/);

  const sim = await startNovaSim({
    timeScale: 200,
    hosts: [
      { name: "rbac-a", maxConcurrentLiveMigrations: 2 },
      { name: "rbac-b", ramMb: 1048576 },
    ],
    servers: [
      { name: "vm-1", host: "rbac-a", ramMb: 4096 },
      { name: "vm-2", host: "rbac-a", ramMb: 8192 },
      { name: "vm-3", host: "rbac-a", ramMb: 2048, status: "SHUTOFF" },
      { name: "vm-4", host: "rbac-a", ramMb: 2048, status: "PAUSED" },
      { name: "vm-5", host: "rbac-a", ramMb: 16384 },
    ],
  });
  // kubectl rather than an in-process client: this file stops its API
  // server, and Deno has crashed when a server went away under in-process
  // keep-alive connections.
  const admin = async (args: string[], stdin?: string) => {
    const out = await e.kubectl(args, stdin === undefined ? {} : { stdin });
    if (out.code !== 0) {
      throw new Error(`kubectl ${args.join(" ")}: ${out.stderr}`);
    }
    return out.stdout;
  };
  for (const name of ["rbac-a", "rbac-b"]) {
    await admin(
      ["create", "-f", "-"],
      JSON.stringify({
        apiVersion: "kvm.cloud.sap/v1",
        kind: "Hypervisor",
        metadata: { name },
        spec: {},
      }),
    );
  }
  const metricsPort = freePort();
  const probePort = freePort();
  const certDir = await makeOwnedTempDir(STAGING_ROOT, "deploy-metrics-");
  const pair = await e.servingCert(["localhost"]);
  await Deno.writeTextFile(`${certDir}/tls.crt`, pair.certPem);
  await Deno.writeTextFile(`${certDir}/tls.key`, pair.keyPem);
  const op = await startOperatorProcess({
    kubeconfigPath: saKubeconfig,
    cloudsYaml: sim.cloudsYaml({
      cloud: "rbac",
      auth: "application_credential",
    }),
    cloud: "rbac",
    args: [
      "--leader-elect",
      "--lease-duration=4s",
      "--renew-deadline=3s",
      "--retry-period=500ms",
      "--poll-interval=200ms",
      "--hypervisor-resync-interval=1s",
      "--eviction-concurrency=3",
      "--webhook-bind-address=0",
      `--metrics-bind-address=127.0.0.1:${metricsPort}`,
      `--metrics-cert-dir=${certDir}`,
      `--health-probe-bind-address=127.0.0.1:${probePort}`,
    ],
    env: { POD_NAMESPACE: "evictor-system", POD_NAME: "evictor-test-0" },
  });
  try {
    await admin(
      ["create", "-f", "-"],
      JSON.stringify({
        apiVersion: "kvm.cloud.sap/v1",
        kind: "Eviction",
        metadata: { name: "rbac-a" },
        spec: { hypervisor: "rbac-a", reason: "kernel 6.12" },
      }),
    );
    let exited: number | undefined;
    op.exited.then((code) => exited = code);
    const done = await waitUntil("the drain to succeed", async () => {
      if (exited !== undefined) {
        throw new Error(`evictor exited with code ${exited}`);
      }
      const obj = JSON.parse(
        await admin(["get", "eviction", "rbac-a", "-o", "json"]),
      ) as {
        status?: {
          conditions?: { type: string; status: string; reason: string }[];
          migratedCount?: number;
        };
      };
      const c = obj.status?.conditions?.find((c) => c.type === "Evicting");
      return c?.status === "False" ? obj : undefined;
    }, 90_000).catch(async (err) => {
      throw new Error(`${err}\n${await operatorLogTail(op)}`);
    });
    const evicting = done.status?.conditions?.find((c) =>
      c.type === "Evicting"
    );
    assert.equal(evicting?.reason, "Succeeded", await operatorLogTail(op));
    assert.equal(done.status?.migratedCount, 5);
    const counters = sim.counters();
    for (const s of sim.state().servers) {
      assert.notEqual(s.host, "rbac-a", `${s.name} left behind`);
      assert.equal(
        counters.migrationsAccepted[s.id] ?? 0,
        1,
        `${s.name} migrated once`,
      );
    }
    const hostA = sim.state().hosts.find((h) => h.name === "rbac-a");
    assert.equal(hostA?.enabled, false, "the drained host stays disabled");

    // The Lease in evictor-system is held by this process.
    const lease = await e.kubectl([
      "get",
      "lease",
      "-n",
      "evictor-system",
      "evictor",
      "-o",
      "jsonpath={.spec.holderIdentity}",
    ]);
    assert.equal(lease.stdout, "evictor-test-0");

    // Events about the cluster-scoped Eviction are in default, the one
    // namespace evictor may write Events to.
    const events = JSON.parse(
      await admin([
        "get",
        "events",
        "-n",
        "default",
        "--field-selector",
        "involvedObject.kind=Eviction,involvedObject.name=rbac-a",
        "-o",
        "json",
      ]),
    ) as { items: unknown[] };
    assert.ok(events.items.length > 0, await operatorLogTail(op));
    for (
      const [ns, want] of [
        ["default", "yes"],
        ["evictor-system", "no"],
        ["kube-system", "no"],
      ]
    ) {
      const can = await e.kubectl(
        ["auth", "can-i", "create", "events", "-n", ns ?? ""],
        { kubeconfig: saKubeconfig },
      );
      assert.equal(can.stdout.trim(), want, `create events in ${ns}`);
    }

    await metricsNeedAnAuthorizedToken(e, metricsPort, probePort);

    // Deleting the Eviction re-enables the compute service.
    await admin(["delete", "eviction", "rbac-a", "--wait=false"]);
    await waitUntil("the service to be re-enabled", () =>
      Promise.resolve(
        sim.state().hosts.find((h) => h.name === "rbac-a")?.enabled
          ? true
          : undefined,
      ));
  } finally {
    await op.stop();
    await Deno.remove(op.dir, { recursive: true }).catch(() => {});
    await sim.close();
  }
});

Deno.test("kubectl apply --server-side -k manifests/ leaves an existing OpenStack Secret as it was", async () => {
  const e = await env();
  const made = await e.kubectl([
    "-n",
    "evictor-system",
    "create",
    "secret",
    "generic",
    "evictor-openstack",
    "--from-literal=clouds.yaml=clouds: {evictor: {auth: {application_credential_secret: real}}}",
  ]);
  assert.equal(made.code, 0, made.stderr);
  const read = async () => {
    const out = await e.kubectl([
      "-n",
      "evictor-system",
      "get",
      "secret",
      "evictor-openstack",
      "-o",
      "json",
    ]);
    assert.equal(out.code, 0, out.stderr);
    return JSON.parse(out.stdout) as {
      data: Record<string, string>;
      metadata: { resourceVersion: string; managedFields: unknown[] };
    };
  };
  const before = await read();
  try {
    const applied = await e.kubectl([
      "apply",
      "--server-side",
      "--force-conflicts",
      "-k",
      new URL("manifests", ROOT).pathname,
    ]);
    assert.equal(applied.code, 0, applied.stderr);
    assert.doesNotMatch(applied.stdout, /secret\//);
    const after = await read();
    assert.deepEqual(after.data, before.data);
    assert.equal(
      after.metadata.resourceVersion,
      before.metadata.resourceVersion,
    );
    assert.deepEqual(
      after.metadata.managedFields,
      before.metadata.managedFields,
    );
  } finally {
    // no webhook runs here: the configuration would refuse every Eviction
    await e.kubectl([
      "delete",
      "validatingwebhookconfiguration",
      "evictor",
      "--ignore-not-found",
    ]);
  }
  const rendered = await e.kubectl([
    "kustomize",
    new URL("manifests", ROOT).pathname,
  ]);
  assert.equal(rendered.code, 0, rendered.stderr);
  assert.doesNotMatch(rendered.stdout, /^kind: Secret$/m);
  assert.doesNotMatch(rendered.stdout, /REPLACE_ME/);
});

Deno.test("manifests/credentials/ makes the Secret from the local clouds.yaml, and refuses without one", async () => {
  const e = await env();
  const dir = await Deno.makeTempDir({ prefix: "evictor-credentials-" });
  try {
    const src = new URL("manifests/credentials/", ROOT);
    await Deno.copyFile(
      new URL("kustomization.yaml", src),
      `${dir}/kustomization.yaml`,
    );
    const missing = await e.kubectl(["kustomize", dir]);
    assert.notEqual(missing.code, 0);
    assert.match(missing.stderr, /clouds\.yaml/);

    const clouds = await Deno.readTextFile(
      new URL("clouds.yaml.example", src),
    );
    await Deno.writeTextFile(`${dir}/clouds.yaml`, clouds);
    const out = await e.kubectl(["kustomize", dir]);
    assert.equal(out.code, 0, out.stderr);
    const secret = parse(out.stdout) as {
      kind: string;
      metadata: { name: string; namespace: string };
      data: Record<string, string>;
    };
    assert.equal(secret.kind, "Secret");
    // the name the Deployment mounts, without a hash suffix
    assert.equal(secret.metadata.name, "evictor-openstack");
    assert.equal(secret.metadata.namespace, "evictor-system");
    const deployment = await Deno.readTextFile(
      new URL("manifests/manager/deployment.yaml", ROOT),
    );
    assert.match(deployment, /secretName: evictor-openstack$/m);
    const bytes = Uint8Array.from(
      atob(secret.data["clouds.yaml"] ?? ""),
      (c) => c.charCodeAt(0),
    );
    assert.equal(new TextDecoder().decode(bytes), clouds);
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});

Deno.test("the binary's permissions refuse reads outside its folders and spawning", async () => {
  const probe = await new Deno.Command(Deno.execPath(), {
    args: [
      "run",
      "--frozen",
      ...PERMISSION_FLAGS,
      new URL("tests/testdata/probe_permissions.ts", ROOT).pathname,
    ],
    stdout: "piped",
    stderr: "piped",
  }).output();
  assert.equal(probe.code, 0, new TextDecoder().decode(probe.stderr));
  const results = JSON.parse(new TextDecoder().decode(probe.stdout));
  assert.deepEqual(results, {
    "read /etc/hostname": "NotCapable",
    "read /root": "NotCapable",
    "spawn true": "NotCapable",
    "write /tmp/evictor/x": "NotCapable",
    "read /etc/openstack": "allowed",
  });
  assert.ok(
    !PERMISSION_FLAGS.some((f) =>
      /^--allow-(run|ffi|write|all)\b/.test(f) || f === "-A"
    ),
  );
});

Deno.test("a kubeconfig outside the allowed folders stops start-up with one clear line", async () => {
  const out = await new Deno.Command(Deno.execPath(), {
    args: [
      "run",
      "--frozen",
      ...PERMISSION_FLAGS,
      new URL("main.ts", ROOT).pathname,
      "run",
      "--kubeconfig=/etc/hostname",
      "--webhook-bind-address=0",
      "--metrics-bind-address=0",
    ],
    env: {
      ...toolchainEnv(),
      OS_AUTH_URL: "http://127.0.0.1:1/v3",
      OS_APPLICATION_CREDENTIAL_ID: "x",
      OS_APPLICATION_CREDENTIAL_SECRET: "y",
    },
    clearEnv: true,
    stdout: "piped",
    stderr: "piped",
  }).output();
  const text = new TextDecoder().decode(out.stdout) +
    new TextDecoder().decode(out.stderr);
  assert.notEqual(out.code, 0, text);
  assert.match(text, /\/etc\/hostname/);
  assert.match(text, /NotCapable|read access/);
});

Deno.test({
  name: "stop the dedicated API server",
  sanitizeOps: false,
  sanitizeResources: false,
  fn: async () => {
    if (envPromise) await (await envPromise).stop();
  },
});
