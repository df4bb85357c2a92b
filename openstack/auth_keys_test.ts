/**
 * Each clouds.yaml key / OS_* variable beyond the basic ones authenticates
 * against the simulator's Keystone and reaches Nova, through
 * loadCloudConfig and createOpenStackClients as the operator uses them; and
 * a wrong value is refused there (the simulator checks what Keystone
 * checks: domains by id or name, issued tokens, the system scope, and
 * behind a TLS front the client certificate).
 */
import assert from "node:assert/strict";
import { startNovaSim } from "../tests/harness/nova_sim/mod.ts";
import { ADMIN_PROJECT_ID } from "../tests/harness/nova_sim/keystone_api.ts";
import { startMtlsProxy } from "../tests/harness/mtls_proxy.ts";
import { createOpenStackClients } from "./client.ts";
import { loadCloudConfig } from "./config.ts";
import { KeystoneSession } from "./keystone.ts";
import { CredentialsRefusedError } from "./keystone.ts";

const SCENARIO = {
  hosts: [{ name: "h1" }],
  servers: [{ name: "vm1", host: "h1", ramMb: 1024 }],
  // a domain whose id and name differ, so that sending one for the other fails
  credentials: {
    username: "evictor",
    password: "pw",
    userDomainName: "Ops",
    userDomainId: "d-ops",
    projectName: "admin",
    projectDomainName: "Ops",
    projectDomainId: "d-ops",
  },
};

/** Authenticates with `env` (and files under `dir`), then lists servers. */
async function tryAuth(
  env: Record<string, string>,
  dir: string,
): Promise<{ projectId: string | undefined; servers: number }> {
  const config = loadCloudConfig({
    sources: { env, homeDir: dir, cwd: dir },
  });
  const clients = createOpenStackClients(config, {
    authBackoff: { initialMs: 1, maxMs: 1 },
    retry: { maxAttempts: 1 },
  });
  try {
    const servers = await clients.nova.listServersOnHost("h1");
    // An action goes out on a connection of its own (openstack/http.ts), which
    // must carry the same TLS settings as the pooled one.
    const service = await clients.nova.findComputeService("h1");
    assert.ok(service, "h1's compute service");
    await clients.nova.setComputeServiceStatus(service.id, true);
    const token = await clients.session.token();
    return { projectId: token.projectId, servers: servers.length };
  } finally {
    clients.close();
  }
}

Deno.test({
  name:
    "auth keys: each authenticates against the simulator, a wrong value is refused",
  sanitizeResources: false,
  sanitizeOps: false,
  async fn() {
    const sim = await startNovaSim(SCENARIO);
    const dir = await Deno.makeTempDir({ prefix: "evictor-auth-keys-" });
    try {
      const base = { OS_AUTH_URL: sim.authUrl, OS_REGION_NAME: "RegionOne" };
      const user = { ...base, OS_USERNAME: "evictor", OS_PASSWORD: "pw" };
      const admin = { projectId: ADMIN_PROJECT_ID, servers: 1 };
      const accepted: [string, Record<string, string>][] = [
        ["OS_DEFAULT_DOMAIN", {
          ...user,
          OS_PROJECT_NAME: "admin",
          OS_DEFAULT_DOMAIN: "d-ops",
        }],
        ["OS_USER_DOMAIN_ID + OS_PROJECT_DOMAIN_ID", {
          ...user,
          OS_PROJECT_NAME: "admin",
          OS_USER_DOMAIN_ID: "d-ops",
          OS_PROJECT_DOMAIN_ID: "d-ops",
        }],
        ["OS_USER_DOMAIN_NAME + OS_PROJECT_DOMAIN_NAME", {
          ...user,
          OS_PROJECT_NAME: "admin",
          OS_USER_DOMAIN_NAME: "Ops",
          OS_PROJECT_DOMAIN_NAME: "Ops",
        }],
        ["an id and a wrong name: the id wins", {
          ...user,
          OS_PROJECT_NAME: "admin",
          OS_USER_DOMAIN_ID: "d-ops",
          OS_USER_DOMAIN_NAME: "Wrong",
          OS_PROJECT_DOMAIN_ID: "d-ops",
          OS_PROJECT_DOMAIN_NAME: "Wrong",
        }],
        ["OS_DOMAIN_NAME", {
          ...user,
          OS_PROJECT_NAME: "admin",
          OS_DOMAIN_NAME: "Ops",
        }],
        ["OS_DOMAIN_ID", {
          ...user,
          OS_PROJECT_NAME: "admin",
          OS_DOMAIN_ID: "d-ops",
        }],
      ];
      for (const [name, env] of accepted) {
        assert.deepEqual(await tryAuth(env, dir), admin, name);
      }

      // clouds.yaml: default_domain under auth
      await Deno.writeTextFile(
        `${dir}/clouds.yaml`,
        `clouds:
  dd:
    region_name: RegionOne
    auth:
      auth_url: ${sim.authUrl}
      username: evictor
      password: pw
      project_name: admin
      default_domain: d-ops
`,
      );
      assert.deepEqual(await tryAuth({ OS_CLOUD: "dd" }, dir), admin);

      // system scope: a system token, no project, Nova still answers
      assert.deepEqual(
        await tryAuth({
          ...user,
          OS_USER_DOMAIN_ID: "d-ops",
          OS_SYSTEM_SCOPE: "all",
        }, dir),
        { projectId: undefined, servers: 1 },
      );

      // token auth: a token Keystone issued, re-scoped to the project or system
      const issuer = new KeystoneSession({
        authUrl: sim.authUrl,
        auth: {
          type: "password",
          username: "evictor",
          password: "pw",
          userDomainId: "d-ops",
          projectId: ADMIN_PROJECT_ID,
        },
      });
      const issued = (await issuer.token()).value;
      assert.deepEqual(
        await tryAuth({
          ...base,
          OS_AUTH_TYPE: "v3token",
          OS_TOKEN: issued,
          OS_PROJECT_ID: ADMIN_PROJECT_ID,
        }, dir),
        admin,
      );
      assert.deepEqual(
        await tryAuth({
          ...base,
          OS_AUTH_TYPE: "token",
          OS_TOKEN: issued,
          OS_SYSTEM_SCOPE: "all",
        }, dir),
        { projectId: undefined, servers: 1 },
      );

      const refused: [string, Record<string, string>][] = [
        ["OS_DEFAULT_DOMAIN is an id, not a name", {
          ...user,
          OS_PROJECT_NAME: "admin",
          OS_DEFAULT_DOMAIN: "Ops",
        }],
        ["a domain id sent as a name", {
          ...user,
          OS_PROJECT_NAME: "admin",
          OS_USER_DOMAIN_NAME: "d-ops",
          OS_PROJECT_DOMAIN_ID: "d-ops",
        }],
        ["a wrong project domain", {
          ...user,
          OS_PROJECT_NAME: "admin",
          OS_USER_DOMAIN_ID: "d-ops",
          OS_PROJECT_DOMAIN_ID: "default",
        }],
        ["a token Keystone never issued", {
          ...base,
          OS_AUTH_TYPE: "v3token",
          OS_TOKEN: "gAAAAAnotatoken",
          OS_PROJECT_ID: ADMIN_PROJECT_ID,
        }],
      ];
      for (const [name, env] of refused) {
        await assert.rejects(
          () => tryAuth(env, dir),
          CredentialsRefusedError,
          name,
        );
      }
    } finally {
      await sim.close();
      await Deno.remove(dir, { recursive: true });
    }
  },
});

Deno.test({
  name:
    "auth keys: OS_CERT/OS_KEY and cert/key: a client certificate on every call to Keystone and the endpoints",
  sanitizeResources: false,
  sanitizeOps: false,
  async fn() {
    const sim = await startNovaSim(SCENARIO);
    const front = await startMtlsProxy(new URL(sim.authUrl).origin);
    const dir = await Deno.makeTempDir({ prefix: "evictor-mtls-" });
    try {
      await Deno.writeTextFile(`${dir}/ca.pem`, front.caCertPem);
      await Deno.writeTextFile(`${dir}/cert.pem`, front.client.certPem);
      await Deno.writeTextFile(`${dir}/key.pem`, front.client.keyPem);
      await Deno.writeTextFile(
        `${dir}/both.pem`,
        front.client.certPem + front.client.keyPem,
      );
      const env = {
        OS_AUTH_URL: `${front.origin}/identity/v3`,
        OS_REGION_NAME: "RegionOne",
        OS_USERNAME: "evictor",
        OS_PASSWORD: "pw",
        OS_PROJECT_NAME: "admin",
        OS_DEFAULT_DOMAIN: "d-ops",
        OS_CACERT: `${dir}/ca.pem`,
      };
      const before = sim.counters().calls;
      assert.deepEqual(
        await tryAuth({
          ...env,
          OS_CERT: `${dir}/cert.pem`,
          OS_KEY: `${dir}/key.pem`,
        }, dir),
        { projectId: ADMIN_PROJECT_ID, servers: 1 },
      );
      // Keystone and Nova were both reached through the front, with the cert
      const after = sim.counters().calls;
      const grew = Object.keys(after).filter((k) =>
        (after[k] ?? 0) > (before[k] ?? 0)
      );
      assert.ok(grew.some((k) => k.includes("/auth/tokens")), grew.join());
      assert.ok(grew.some((k) => k.includes("/servers/detail")), grew.join());
      assert.ok(grew.some((k) => k.includes("/os-services/")), grew.join());
      assert.ok(front.clients.length >= 2, front.clients.join());
      assert.deepEqual([...new Set(front.clients)], ["evictor"]);

      // one file with both, in clouds.yaml
      await Deno.writeTextFile(
        `${dir}/clouds.yaml`,
        `clouds:
  mtls:
    region_name: RegionOne
    cacert: ${dir}/ca.pem
    cert: ${dir}/both.pem
    auth:
      auth_url: ${front.origin}/identity/v3
      username: evictor
      password: pw
      project_name: admin
      default_domain: d-ops
`,
      );
      assert.equal((await tryAuth({ OS_CLOUD: "mtls" }, dir)).servers, 1);

      // without a certificate the front completes no handshake
      await assert.rejects(() => tryAuth(env, dir), /failed|refused|closed/i);
    } finally {
      await front.close();
      await sim.close();
      await Deno.remove(dir, { recursive: true });
    }
  },
});
