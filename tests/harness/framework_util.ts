/**
 * Test helpers (private to the framework's tests): a tiny CA, a loopback
 * TCP proxy that can stall or cut connections, and polling.
 *
 * @module
 */

import * as x509 from "@peculiar/x509";
import {
  type CertificatePair,
  privateKeyPem,
  sanExtension,
} from "../../framework/self_signed.ts";

const ALG: EcKeyGenParams & EcdsaParams = {
  name: "ECDSA",
  namedCurve: "P-256",
  hash: "SHA-256",
};

/** A throwaway CA that signs serving certificates. */
export interface TestCa {
  /** The CA certificate, PEM. */
  certPem: string;
  /** Issues a serving certificate for `hosts`. */
  issue(hosts: string[]): Promise<CertificatePair>;
}

/** Creates a throwaway CA. */
export async function createTestCa(): Promise<TestCa> {
  const keys = await crypto.subtle.generateKey(ALG, true, ["sign", "verify"]);
  const now = Date.now();
  const ca = await x509.X509CertificateGenerator.createSelfSigned({
    serialNumber: "01",
    name: "CN=framework test CA",
    notBefore: new Date(now - 60_000),
    notAfter: new Date(now + 86_400_000),
    signingAlgorithm: ALG,
    keys,
    extensions: [
      new x509.BasicConstraintsExtension(true, undefined, true),
      new x509.KeyUsagesExtension(
        x509.KeyUsageFlags.keyCertSign | x509.KeyUsageFlags.cRLSign,
        true,
      ),
    ],
  }, crypto);
  let serial = 2;
  return {
    certPem: ca.toString("pem"),
    async issue(hosts) {
      const leafKeys = await crypto.subtle.generateKey(ALG, true, [
        "sign",
        "verify",
      ]);
      const cert = await x509.X509CertificateGenerator.create({
        serialNumber: (serial++).toString(16).padStart(2, "0"),
        subject: `CN=${hosts[0] ?? "localhost"}`,
        issuer: ca.subject,
        notBefore: new Date(Date.now() - 60_000),
        notAfter: new Date(Date.now() + 86_400_000),
        signingAlgorithm: ALG,
        publicKey: leafKeys.publicKey,
        signingKey: keys.privateKey,
        extensions: [
          new x509.BasicConstraintsExtension(false, undefined, true),
          new x509.ExtendedKeyUsageExtension([
            x509.ExtendedKeyUsage.serverAuth,
          ]),
          await sanExtension(hosts),
        ],
      }, crypto);
      return {
        certPem: cert.toString("pem"),
        keyPem: await privateKeyPem(leafKeys.privateKey),
      };
    },
  };
}

/** A loopback TCP proxy to a target port. */
export class TcpProxy {
  readonly #listener: Deno.TcpListener;
  readonly #target: { hostname: string; port: number };
  readonly #conns = new Set<Deno.Conn>();
  #stalled = false;
  #cut = false;
  #loop: Promise<void>;

  /** Starts a proxy on 127.0.0.1:0 to `target`. */
  constructor(target: { hostname: string; port: number }) {
    this.#target = target;
    this.#listener = Deno.listen({ hostname: "127.0.0.1", port: 0 });
    this.#loop = this.#accept();
  }

  /** The proxy's port. */
  get port(): number {
    return this.#listener.addr.port;
  }

  /** Number of open client connections. */
  get connections(): number {
    return this.#conns.size / 2;
  }

  async #accept(): Promise<void> {
    for (;;) {
      let conn: Deno.Conn;
      try {
        conn = await this.#listener.accept();
      } catch {
        return;
      }
      if (this.#cut) {
        conn.close();
        continue;
      }
      void this.#pipe(conn);
    }
  }

  async #copy(from: Deno.Conn, to: Deno.Conn): Promise<void> {
    const buf = new Uint8Array(64 * 1024);
    for (;;) {
      let n: number | null;
      try {
        n = await from.read(buf);
      } catch {
        return;
      }
      if (n === null) return;
      // stalled: swallow bytes, keep the connection open (a silent stream)
      if (this.#stalled) continue;
      let off = 0;
      try {
        while (off < n) off += await to.write(buf.subarray(off, n));
      } catch {
        return;
      }
    }
  }

  async #pipe(client: Deno.Conn): Promise<void> {
    let server: Deno.Conn | undefined;
    try {
      server = await Deno.connect(this.#target);
      this.#conns.add(client);
      this.#conns.add(server);
      await Promise.race([
        this.#copy(client, server),
        this.#copy(server, client),
      ]);
    } catch {
      // target down
    } finally {
      for (const c of [client, server]) {
        if (c === undefined) continue;
        this.#conns.delete(c);
        try {
          c.close();
        } catch {
          // closed
        }
      }
    }
  }

  /** Existing connections go silent (bytes dropped, sockets kept); new ones too. */
  stall(on = true): void {
    this.#stalled = on;
  }

  /** Closes every connection and refuses new ones until {@linkcode restore}. */
  cut(): void {
    this.#cut = true;
    this.#closeAll();
  }

  /** Accepts connections again and stops stalling. */
  restore(): void {
    this.#cut = false;
    this.#stalled = false;
  }

  /** Drops the current connections (new ones still work). */
  resetConnections(): void {
    this.#closeAll();
  }

  #closeAll(): void {
    for (const c of this.#conns) {
      try {
        c.close();
      } catch {
        // closed
      }
    }
    this.#conns.clear();
  }

  /** Stops the proxy. */
  async close(): Promise<void> {
    this.#listener.close();
    this.#closeAll();
    await this.#loop;
  }
}

/** Polls `fn` until it returns a truthy value or `timeoutMs` passes. */
export async function waitFor<T>(
  what: string,
  fn: () => T | Promise<T>,
  timeoutMs = 20_000,
  intervalMs = 50,
): Promise<NonNullable<T>> {
  const deadline = Date.now() + timeoutMs;
  let last: unknown;
  for (;;) {
    try {
      const v = await fn();
      if (v) return v as NonNullable<T>;
    } catch (err) {
      last = err;
    }
    if (Date.now() > deadline) {
      throw new Error(
        `timed out after ${timeoutMs} ms waiting for ${what}${
          last ? `: ${String(last)}` : ""
        }`,
      );
    }
    await new Promise((r) => setTimeout(r, intervalMs));
  }
}

/** A short unique suffix for object names and labels. */
export function uniq(prefix: string): string {
  return `${prefix}-${crypto.randomUUID().slice(0, 8)}`;
}

// --- envtest helpers -------------------------------------------------------

import { type Envtest, sharedEnvtest } from "./envtest.ts";
import { KubeClient } from "../../framework/client.ts";
import { defineKind, type KubeObject } from "../../framework/kind.ts";

export type { Envtest };
export { sharedEnvtest };

/** ConfigMaps: a core, namespaced kind. */
export const ConfigMaps = defineKind<
  KubeObject & { data?: Record<string, string> }
>({
  group: "",
  version: "v1",
  plural: "configmaps",
  kind: "ConfigMap",
  namespaced: true,
});

/** A test-only namespaced custom resource with a status subresource. */
export interface Widget extends KubeObject {
  spec?: Record<string, unknown>;
  status?: Record<string, unknown>;
}

/** The Widget kind (fwtest.example.com/v1). */
export const Widgets = defineKind<Widget>({
  group: "fwtest.example.com",
  version: "v1",
  plural: "widgets",
  kind: "Widget",
  namespaced: true,
});

const WIDGET_CRD = {
  apiVersion: "apiextensions.k8s.io/v1",
  kind: "CustomResourceDefinition",
  metadata: { name: "widgets.fwtest.example.com" },
  spec: {
    group: "fwtest.example.com",
    scope: "Namespaced",
    names: {
      plural: "widgets",
      singular: "widget",
      kind: "Widget",
      listKind: "WidgetList",
    },
    versions: [{
      name: "v1",
      served: true,
      storage: true,
      subresources: { status: {} },
      schema: {
        openAPIV3Schema: {
          type: "object",
          "x-kubernetes-preserve-unknown-fields": true,
        },
      },
    }],
  },
};

/** An admin client for `env` (optionally through another server URL). */
export function adminClient(
  env: Envtest,
  server?: string,
): Promise<KubeClient> {
  return KubeClient.fromKubeConfig(
    env.kubeConfig(),
    server === undefined ? {} : { server },
  );
}

/** A test-only cluster-scoped custom resource (like Eviction). */
export const Gadgets = defineKind<Widget>({
  group: "fwtest.example.com",
  version: "v1",
  plural: "gadgets",
  kind: "Gadget",
  namespaced: false,
});

const GADGET_CRD = {
  ...WIDGET_CRD,
  metadata: { name: "gadgets.fwtest.example.com" },
  spec: {
    ...WIDGET_CRD.spec,
    scope: "Cluster",
    names: {
      plural: "gadgets",
      singular: "gadget",
      kind: "Gadget",
      listKind: "GadgetList",
    },
  },
};

/** Installs the Widget and Gadget CRDs (idempotent) and waits until they are served. */
export async function installWidgetCrd(client: KubeClient): Promise<void> {
  for (
    const [crd, plural] of [[WIDGET_CRD, "widgets"], [
      GADGET_CRD,
      "gadgets",
    ]] as const
  ) {
    try {
      await client.request(
        "POST",
        "/apis/apiextensions.k8s.io/v1/customresourcedefinitions",
        { body: crd },
      );
    } catch (err) {
      if (!(err instanceof Error && / 409 /.test(err.message))) throw err;
    }
    await waitFor(
      `the ${plural} CRD to be served`,
      async () => {
        await client.request(
          "GET",
          `/apis/fwtest.example.com/v1/${plural}?limit=1`,
        );
        return true;
      },
      30_000,
      100,
    );
  }
}

/** Creates a namespace with a unique name; returns it. */
export async function createNamespace(
  client: KubeClient,
  prefix: string,
): Promise<string> {
  const name = uniq(prefix);
  await client.request("POST", "/api/v1/namespaces", {
    body: { apiVersion: "v1", kind: "Namespace", metadata: { name } },
  });
  return name;
}

/** Deletes a namespace (best effort). */
export async function deleteNamespace(
  client: KubeClient,
  name: string,
): Promise<void> {
  await client.request("DELETE", `/api/v1/namespaces/${name}`).catch(() => {});
}

/** The host and port of a `https://host:port` URL. */
export function hostPort(server: string): { hostname: string; port: number } {
  const u = new URL(server);
  return { hostname: u.hostname, port: Number(u.port) };
}

/** Options shared by envtest-backed tests. */
export const INTEGRATION = {
  sanitizeOps: false,
  sanitizeResources: false,
} as const;
