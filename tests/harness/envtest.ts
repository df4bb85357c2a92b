/**
 * A real etcd and kube-apiserver on free loopback ports, with RBAC
 * authorization and client-certificate authentication, for tests.
 *
 * Tests of one run share one API server (started by `tests/run.ts` and
 * announced in `EVICTOR_ENVTEST`); tests that break things (compaction,
 * cut-off leaders) start their own with {@linkcode startEnvtest}.
 *
 * @module
 */
import * as k8s from "@kubernetes/client-node";
import { parse as parseYaml } from "yaml";
import {
  type CertificatePair,
  createSigningKey,
  createTestCa,
  loadTestCa,
} from "./pki.ts";
import { buildHackTool } from "./hack_tools.ts";
import {
  freePort,
  makeOwnedTempDir,
  type ManagedProcess,
  startProcess,
  tail,
} from "./processes.ts";

const ROOT = new URL("../../", import.meta.url);

/** The environment variable that hands the shared API server to tests. */
export const SHARED_ENV = "EVICTOR_ENVTEST";

/** A running API server and how to talk to it. */
export interface Envtest {
  /** `https://127.0.0.1:PORT` */
  server: string;
  /** An admin (system:masters) kubeconfig file. */
  kubeconfigPath: string;
  /** A fresh KubeConfig for the admin. */
  kubeConfig(): k8s.KubeConfig;
  /** The test CA; the API server trusts client certificates it signs. */
  caCertPem: string;
  caKeyPem: string;
  /** etcd's client URL, `http://127.0.0.1:PORT`. */
  etcdEndpoint: string;
  /** The folder that holds kube-apiserver, etcd and kubectl. */
  binDir: string;
  /** Runs the real kubectl against this server (admin unless told). */
  kubectl(
    args: string[],
    opts?: { stdin?: string; kubeconfig?: string },
  ): Promise<{ code: number; stdout: string; stderr: string }>;
  /** A kubeconfig for `user` in `groups`, with a client certificate from the CA. */
  kubeconfigFor(user: string, groups?: string[]): Promise<string>;
  /** A serving certificate from the test CA, e.g. for a webhook server. */
  servingCert(hosts: string[]): Promise<CertificatePair>;
  /** Stops the servers and removes their files (a no-op for the shared one). */
  stop(): Promise<void>;
}

/** An API server this process started: it can take the API server down and up. */
export interface OwnEnvtest extends Envtest {
  /** Kills kube-apiserver with SIGKILL (etcd keeps running); resolves once it is gone. */
  stopApiServer(): Promise<void>;
  /**
   * Starts kube-apiserver again with the same flags: same port, same etcd,
   * same certificates; resolves once `/readyz` answers 200.
   */
  startApiServer(): Promise<void>;
}

/** What {@linkcode startEnvtest} can be told. */
export interface EnvtestOptions {
  /** Install the CRDs from manifests/crds (default true). */
  installCrds?: boolean;
  /** Extra kube-apiserver flags. */
  apiServerFlags?: string[];
}

/** What the shared server hands to test processes through the environment. */
interface SharedDescriptor {
  server: string;
  kubeconfigPath: string;
  caCertPath: string;
  caKeyPath: string;
  etcdEndpoint: string;
  binDir: string;
  dir: string;
}

/**
 * Finds the envtest binaries: `KUBEBUILDER_ASSETS` when it has them, else the
 * cache filled by `hack/envtest/build.sh` (which builds them on first use).
 */
export function envtestBinDir(): Promise<string> {
  return buildHackTool("envtest");
}

/**
 * Starts etcd and kube-apiserver and waits until the API server is ready
 * (and the CRDs are Established, unless told not to install them).
 *
 * @example
 * ```ts ignore
 * const env = await startEnvtest();
 * try {
 *   const { stdout } = await env.kubectl(["get", "crds"]);
 *   console.log(stdout);
 * } finally {
 *   await env.stop();
 * }
 * ```
 */
export async function startEnvtest(
  options: EnvtestOptions = {},
): Promise<OwnEnvtest> {
  const binDir = await envtestBinDir();
  const dir = await makeOwnedTempDir(
    Deno.env.get("TMPDIR") ?? "/tmp",
    DIR_PREFIX,
  );
  const processes: ManagedProcess[] = [];
  const cleanup = async () => {
    // Let clients of this test process finish with their keep-alive
    // connections first: Deno 2.9 has crashed (SIGSEGV in a tokio worker)
    // when the API server went away right under a connection in use.
    if (processes.length > 0) await new Promise((r) => setTimeout(r, 1000));
    for (const p of processes.reverse()) await p.stop();
    await Deno.remove(dir, { recursive: true }).catch(() => {});
  };
  try {
    const ca = await createTestCa("evictor-envtest-ca");
    const serving = await ca.issue({
      commonName: "kube-apiserver",
      hosts: ["127.0.0.1", "localhost", "kubernetes.default.svc"],
      usage: "server",
    });
    const admin = await ca.issue({
      commonName: "envtest-admin",
      organizations: ["system:masters"],
      usage: "client",
    });
    const sa = await createSigningKey();
    const files = {
      caCert: `${dir}/ca.crt`,
      caKey: `${dir}/ca.key`,
      servingCert: `${dir}/apiserver.crt`,
      servingKey: `${dir}/apiserver.key`,
      saKey: `${dir}/sa.key`,
      saPub: `${dir}/sa.pub`,
      kubeconfig: `${dir}/admin.kubeconfig`,
    };
    await Promise.all([
      Deno.writeTextFile(files.caCert, ca.certPem),
      Deno.writeTextFile(files.caKey, ca.keyPem),
      Deno.writeTextFile(files.servingCert, serving.certPem),
      Deno.writeTextFile(files.servingKey, serving.keyPem),
      Deno.writeTextFile(files.saKey, sa.privateKeyPem),
      Deno.writeTextFile(files.saPub, sa.publicKeyPem),
    ]);

    const etcdPort = freePort();
    const etcdPeerPort = freePort();
    const etcdEndpoint = `http://127.0.0.1:${etcdPort}`;
    processes.push(startProcess("etcd", `${binDir}/etcd`, [
      `--data-dir=${dir}/etcd`,
      `--listen-client-urls=${etcdEndpoint}`,
      `--advertise-client-urls=${etcdEndpoint}`,
      `--listen-peer-urls=http://127.0.0.1:${etcdPeerPort}`,
      `--initial-advertise-peer-urls=http://127.0.0.1:${etcdPeerPort}`,
      `--initial-cluster=default=http://127.0.0.1:${etcdPeerPort}`,
      "--unsafe-no-fsync",
      "--log-level=warn",
      // etcd's default (1.5 MiB) refuses objects the API server sends (up
      // to its etcd client's 2 MiB); clusters with large objects raise it
      "--max-request-bytes=8388608",
    ], `${dir}/etcd.log`));

    const port = freePort();
    const server = `https://127.0.0.1:${port}`;
    const apiServerArgs = [
      `--etcd-servers=${etcdEndpoint}`,
      `--secure-port=${port}`,
      "--bind-address=127.0.0.1",
      "--advertise-address=127.0.0.1",
      // The kubernetes Service endpoint cannot point at loopback; none is needed.
      "--endpoint-reconciler-type=none",
      `--cert-dir=${dir}/certs`,
      `--tls-cert-file=${files.servingCert}`,
      `--tls-private-key-file=${files.servingKey}`,
      `--client-ca-file=${files.caCert}`,
      "--authorization-mode=RBAC",
      "--service-account-issuer=https://kubernetes.default.svc",
      `--service-account-key-file=${files.saPub}`,
      `--service-account-signing-key-file=${files.saKey}`,
      "--service-cluster-ip-range=10.0.0.0/24",
      "--disable-admission-plugins=ServiceAccount",
      "--allow-privileged=true",
      "--v=1",
      ...(options.apiServerFlags ?? []),
    ];
    const startApiServer = () =>
      startProcess(
        "kube-apiserver",
        `${binDir}/kube-apiserver`,
        apiServerArgs,
        `${dir}/kube-apiserver.log`,
      );
    processes.push(startApiServer());

    await Deno.writeTextFile(
      files.kubeconfig,
      kubeconfigYaml(server, ca.certPem, admin, "envtest-admin"),
    );
    const descriptor: SharedDescriptor = {
      server,
      kubeconfigPath: files.kubeconfig,
      caCertPath: files.caCert,
      caKeyPath: files.caKey,
      etcdEndpoint,
      binDir,
      dir,
    };
    const env = await envtestFrom(descriptor, ca.certPem, ca.keyPem, cleanup);
    await waitReady(env, processes);
    if (options.installCrds ?? true) await installCrds(env);
    // processes: [etcd, kube-apiserver]
    return {
      ...env,
      async stopApiServer() {
        await processes[1]?.kill();
      },
      async startApiServer() {
        if (
          await Promise.race([
            processes[1]?.exited,
            Promise.resolve(undefined),
          ]) ===
            undefined
        ) {
          throw new Error("kube-apiserver is running: stop it first");
        }
        processes[1] = startApiServer();
        await waitReady(env, processes);
      },
    };
  } catch (error) {
    await cleanup();
    throw error;
  }
}

const DIR_PREFIX = "evictor-envtest-";

let shared: Promise<Envtest> | undefined;

/**
 * The API server shared by this test run (CRDs installed). Started by
 * `tests/run.ts`; when a test file runs on its own, this process starts one
 * and stops it when the process ends. Never stop it from a test.
 */
export function sharedEnvtest(): Promise<Envtest> {
  shared ??= (async () => {
    const announced = Deno.env.get(SHARED_ENV);
    if (announced) {
      const d = JSON.parse(announced) as SharedDescriptor;
      const [caCertPem, caKeyPem] = await Promise.all([
        Deno.readTextFile(d.caCertPath),
        Deno.readTextFile(d.caKeyPath),
      ]);
      return envtestFrom(d, caCertPem, caKeyPem, () => Promise.resolve());
    }
    // Ends with this process: the watchdogs stop its servers, and the next
    // envtest removes its folder (makeOwnedTempDir).
    const own = await startEnvtest();
    return { ...own, stop: () => Promise.resolve() };
  })();
  return shared;
}

/** Serialises an envtest for child processes (used by tests/run.ts). */
export function describeEnvtest(env: Envtest): string {
  const dir = env.kubeconfigPath.replace(/\/[^/]+$/, "");
  const d: SharedDescriptor = {
    server: env.server,
    kubeconfigPath: env.kubeconfigPath,
    caCertPath: `${dir}/ca.crt`,
    caKeyPath: `${dir}/ca.key`,
    etcdEndpoint: env.etcdEndpoint,
    binDir: env.binDir,
    dir,
  };
  return JSON.stringify(d);
}

async function envtestFrom(
  d: SharedDescriptor,
  caCertPem: string,
  caKeyPem: string,
  stop: () => Promise<void>,
): Promise<Envtest> {
  const ca = await loadTestCa(caCertPem, caKeyPem);
  let serial = 0;
  const env: Envtest = {
    server: d.server,
    kubeconfigPath: d.kubeconfigPath,
    caCertPem,
    caKeyPem,
    etcdEndpoint: d.etcdEndpoint,
    binDir: d.binDir,
    kubeConfig() {
      const kc = new k8s.KubeConfig();
      kc.loadFromFile(d.kubeconfigPath);
      return kc;
    },
    async kubectl(args, opts = {}) {
      const child = new Deno.Command(`${d.binDir}/kubectl`, {
        args: ["--kubeconfig", opts.kubeconfig ?? d.kubeconfigPath, ...args],
        stdin: opts.stdin === undefined ? "null" : "piped",
        stdout: "piped",
        stderr: "piped",
        env: { NO_COLOR: "1" },
      }).spawn();
      if (opts.stdin !== undefined) {
        const w = child.stdin.getWriter();
        await w.write(new TextEncoder().encode(opts.stdin));
        await w.close();
      }
      const out = await child.output();
      const text = new TextDecoder();
      return {
        code: out.code,
        stdout: text.decode(out.stdout),
        stderr: text.decode(out.stderr),
      };
    },
    async kubeconfigFor(user, groups = []) {
      const cert = await ca.issue({
        commonName: user,
        organizations: groups,
        usage: "client",
      });
      const safe = user.replace(/[^A-Za-z0-9_.-]/g, "_");
      const path = `${d.dir}/${safe}-${Date.now()}-${serial++}.kubeconfig`;
      await Deno.writeTextFile(
        path,
        kubeconfigYaml(d.server, caCertPem, cert, user),
      );
      return path;
    },
    servingCert(hosts) {
      return ca.issue({
        commonName: hosts[0] ?? "localhost",
        hosts,
        usage: "server",
      });
    },
    stop,
  };
  return env;
}

function b64(text: string): string {
  return btoa(text);
}

function kubeconfigYaml(
  server: string,
  caPem: string,
  client: CertificatePair,
  user: string,
): string {
  return JSON.stringify(
    {
      apiVersion: "v1",
      kind: "Config",
      clusters: [{
        name: "envtest",
        cluster: { server, "certificate-authority-data": b64(caPem) },
      }],
      users: [{
        name: user,
        user: {
          "client-certificate-data": b64(client.certPem),
          "client-key-data": b64(client.keyPem),
        },
      }],
      contexts: [{ name: "envtest", context: { cluster: "envtest", user } }],
      "current-context": "envtest",
    },
    null,
    2,
  );
}

async function waitReady(env: Envtest, processes: ManagedProcess[]) {
  const kc = env.kubeConfig();
  const cluster = kc.getCurrentCluster();
  const user = kc.getCurrentUser();
  if (!cluster?.caData || !user?.certData || !user.keyData) {
    throw new Error("envtest kubeconfig lacks its certificates");
  }
  const client = Deno.createHttpClient({
    caCerts: [atob(cluster.caData)],
    cert: atob(user.certData),
    key: atob(user.keyData),
  });
  const deadline = Date.now() + 90_000;
  let last = "";
  try {
    while (Date.now() < deadline) {
      for (const p of processes) {
        const code = await Promise.race([
          p.exited,
          Promise.resolve(undefined),
        ]);
        if (code !== undefined) {
          throw new Error(
            `${p.name} exited with code ${code} during start-up:\n${await tail(
              p.logPath,
            )}`,
          );
        }
      }
      try {
        const res = await fetch(`${env.server}/readyz`, {
          client,
          signal: AbortSignal.timeout(2000),
        });
        last = `${res.status} ${await res.text()}`;
        if (res.ok) return;
      } catch (e) {
        last = String(e);
      }
      await new Promise((r) => setTimeout(r, 200));
    }
  } finally {
    client.close();
  }
  throw new Error(
    `kube-apiserver not ready after 90 s (last answer: ${last}):\n${await tail(
      processes[processes.length - 1]?.logPath ?? "",
    )}`,
  );
}

/** Reads every CRD under manifests/crds. */
export async function readCrds(): Promise<k8s.V1CustomResourceDefinition[]> {
  const dir = new URL("manifests/crds/", ROOT);
  const crds: k8s.V1CustomResourceDefinition[] = [];
  for await (const entry of Deno.readDir(dir)) {
    if (!entry.isFile || !entry.name.endsWith(".yaml")) continue;
    const text = await Deno.readTextFile(new URL(entry.name, dir));
    crds.push(parseYaml(text) as k8s.V1CustomResourceDefinition);
  }
  return crds.sort((a, b) =>
    (a.metadata?.name ?? "").localeCompare(b.metadata?.name ?? "")
  );
}

/**
 * Applies the CRDs with the real kubectl and waits until each is Established.
 *
 * kubectl rather than client-node: client-node serialises a
 * CustomResourceDefinition through its typed model, which silently drops
 * `x-kubernetes-*` keys written the YAML way (CEL rules, list-map keys).
 */
export async function installCrds(env: Envtest): Promise<void> {
  await applyCrdFiles(
    env,
    [new URL("manifests/crds/", ROOT).pathname],
    (await readCrds()).map((c) => c.metadata?.name ?? ""),
  );
}

/**
 * Applies `paths` (files or folders of CRDs, and other objects they need)
 * server-side with the real kubectl and waits until the CRDs `names` are
 * Established.
 *
 * @example
 * ```ts ignore
 * await applyCrdFiles(env, ["tests/testdata/cert_manager_crds.yaml"], ["certificates.cert-manager.io"]);
 * ```
 */
export async function applyCrdFiles(
  env: Envtest,
  paths: readonly string[],
  names: readonly string[],
): Promise<void> {
  for (const path of paths) {
    const applied = await env.kubectl([
      "apply",
      "--server-side",
      "--force-conflicts",
      "-f",
      path,
    ]);
    if (applied.code !== 0) {
      throw new Error(`kubectl apply of ${path} failed: ${applied.stderr}`);
    }
  }
  const waited = await env.kubectl([
    "wait",
    "--for=condition=Established",
    "--timeout=30s",
    ...names.map((n) => `crd/${n}`),
  ]);
  if (waited.code !== 0) {
    throw new Error(`CRDs not Established: ${waited.stderr}`);
  }
}
