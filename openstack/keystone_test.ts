import assert from "node:assert/strict";
import {
  BASIC_SCENARIO,
  captureLogger,
  fakeClock,
  withSim,
} from "../tests/harness/openstack_util.ts";
import { UnauthorizedError } from "./errors.ts";
import {
  EndpointNotFoundError,
  findEndpoint,
  KeystoneSession,
} from "./keystone.ts";
import { NovaClient } from "./nova.ts";
import { startNovaSim } from "../tests/harness/nova_sim/mod.ts";

const TOKENS = "POST /identity/v3/auth/tokens";

Deno.test("keystone: password auth gets a token and a catalog with compute and placement", async () => {
  await withSim(BASIC_SCENARIO, async ({ session, sim }) => {
    const token = await session.token();
    assert.ok(token.value.length > 20);
    assert.ok(token.expiresAt > Date.now());
    assert.equal(await session.endpoint("compute"), sim.computeUrl);
    assert.equal(await session.endpoint("placement"), sim.placementUrl);
    assert.equal(
      await session.endpoint("compute", { interface: "internal" }),
      sim.computeUrl,
    );
    await assert.rejects(
      session.endpoint("compute", { region: "Elsewhere" }),
      EndpointNotFoundError,
    );
    await assert.rejects(session.endpoint("volumev3"), EndpointNotFoundError);
    assert.equal(sim.counters().calls[TOKENS], 1);
  });
});

Deno.test("keystone: application credential auth works for Nova calls", async () => {
  await withSim(BASIC_SCENARIO, async ({ nova, sim }) => {
    assert.equal((await nova.listServersOnHost("node002")).length, 1);
    assert.equal(sim.counters().calls[TOKENS], 1);
  }, { auth: "application_credential" });
});

Deno.test("keystone: application credential by name and user", async () => {
  const sim = await startNovaSim(BASIC_SCENARIO);
  try {
    const c = sim.credentials;
    const session = new KeystoneSession({
      authUrl: sim.authUrl,
      auth: {
        type: "v3applicationcredential",
        applicationCredentialName: c.applicationCredential.name ?? "",
        applicationCredentialSecret: c.applicationCredential.secret,
        username: c.password.username,
        userDomainName: c.password.userDomainName,
      },
    });
    assert.ok((await session.token()).value);
  } finally {
    await sim.close();
  }
});

Deno.test("keystone: wrong password is Unauthorized with Keystone's message", async () => {
  const sim = await startNovaSim(BASIC_SCENARIO);
  try {
    const c = sim.credentials.password;
    const session = new KeystoneSession({
      authUrl: sim.authUrl,
      auth: { type: "password", ...c, password: "wrong" },
    });
    await assert.rejects(session.token(), (e: unknown) => {
      assert.ok(e instanceof UnauthorizedError);
      assert.equal(
        e.message,
        "The request you have made requires authentication.",
      );
      assert.match(e.requestId ?? "", /^req-/);
      return true;
    });
  } finally {
    await sim.close();
  }
});

Deno.test("keystone: the token is reused until shortly before expiry, then renewed", async () => {
  const clock = fakeClock();
  await withSim(BASIC_SCENARIO, async ({ nova, sim, session }) => {
    await nova.listServersOnHost("node001");
    await nova.listServersOnHost("node001");
    assert.equal(sim.counters().calls[TOKENS], 1);
    const first = await session.token();
    // 10 minutes before expiry: still used.
    clock.advance(first.expiresAt - clock.now() - 600_000);
    await nova.listServersOnHost("node001");
    assert.equal(sim.counters().calls[TOKENS], 1);
    // 1 minute before expiry (margin is 2 minutes): renewed first.
    clock.advance(540_000);
    await nova.listServersOnHost("node001");
    assert.equal(sim.counters().calls[TOKENS], 2);
    assert.notEqual((await session.token()).value, first.value);
    assert.equal(session.authCount, 2);
  }, { transport: { clock } });
});

Deno.test("keystone: a 401 causes exactly one re-auth and the call succeeds", async () => {
  await withSim(BASIC_SCENARIO, async ({ nova, sim, session }) => {
    await nova.listServersOnHost("node001");
    sim.revokeTokens();
    const servers = await nova.listServersOnHost("node001");
    assert.equal(servers.length, 3);
    assert.equal(sim.counters().calls[TOKENS], 2);
    assert.equal(sim.counters().calls["GET /compute/v2.1/servers/detail"], 3);
    assert.equal(session.authCount, 2);
  });
});

Deno.test("keystone: a persistent 401 re-authenticates once, then fails Unauthorized", async () => {
  const sim = await startNovaSim(BASIC_SCENARIO);
  try {
    const c = sim.credentials.password;
    // A proxy that mangles the token on Nova calls: every Nova call is a 401.
    const mangling: typeof fetch = (input, init) => {
      const url = String(input);
      if (url.includes("/compute/")) {
        const headers = new Headers(init?.headers);
        headers.set("X-Auth-Token", "mangled");
        return fetch(input, { ...init, headers });
      }
      return fetch(input, init);
    };
    const session = new KeystoneSession({
      authUrl: sim.authUrl,
      auth: { type: "password", ...c },
      fetch: mangling,
    });
    const nova = new NovaClient(session);
    await assert.rejects(nova.listServersOnHost("node001"), UnauthorizedError);
    assert.equal(sim.counters().calls[TOKENS], 2);
    assert.equal(sim.counters().calls["GET /compute/v2.1/servers/detail"], 2);
    // A POST refused with 401 is resent once too (401 = not processed), never more.
    const id = sim.state().servers[0]?.id ?? "";
    await assert.rejects(nova.liveMigrate(id), UnauthorizedError);
    assert.equal(
      sim.counters().calls["POST /compute/v2.1/servers/{id}/action"],
      2,
    );
    assert.equal(sim.counters().migrationsAccepted[id], undefined);
  } finally {
    await sim.close();
  }
});

Deno.test("keystone: concurrent callers share one authentication", async () => {
  await withSim(BASIC_SCENARIO, async ({ nova, sim }) => {
    await Promise.all(
      [1, 2, 3, 4, 5].map(() => nova.listServersOnHost("node001")),
    );
    assert.equal(sim.counters().calls[TOKENS], 1);
  });
});

Deno.test("keystone: passwords, secrets and tokens never reach the logs", async () => {
  const logger = captureLogger();
  const sim = await startNovaSim({
    ...BASIC_SCENARIO,
    credentials: {
      password: "pw-SHOULD-NOT-LEAK",
      applicationCredentials: [{ id: "ac", secret: "secret-SHOULD-NOT-LEAK" }],
    },
  });
  try {
    const c = sim.credentials;
    const tokens: string[] = [];
    for (
      const auth of [
        { type: "password" as const, ...c.password },
        {
          type: "v3applicationcredential" as const,
          applicationCredentialId: "ac",
          applicationCredentialSecret: "secret-SHOULD-NOT-LEAK",
        },
      ]
    ) {
      const session = new KeystoneSession({
        authUrl: sim.authUrl,
        auth,
        logger,
        retry: { baseDelayMs: 1 },
      });
      const nova = new NovaClient(session);
      const id = sim.state().servers[0]?.id ?? "";
      await nova.listServersOnHost("node001");
      await nova.liveMigrate(id).catch(() => {});
      sim.revokeTokens();
      await nova.getServer(id);
      sim.injectHttpFault({ status: 503, count: 1 });
      await nova.listServersOnHost("node001");
      tokens.push((await session.token()).value);
    }
    const bad = new KeystoneSession({
      authUrl: sim.authUrl,
      auth: {
        type: "password",
        ...c.password,
        password: "wrong-SHOULD-NOT-LEAK",
      },
      logger,
    });
    await bad.token().catch((e: Error) =>
      logger.warn({ error: e.message }, "failed")
    );
    const text = logger.text();
    assert.ok(logger.lines.length > 10);
    assert.ok(!text.includes("SHOULD-NOT-LEAK"), text);
    for (const t of tokens) assert.ok(!text.includes(t));
    assert.ok(!/x-auth-token/i.test(text));
  } finally {
    await sim.close();
  }
});

Deno.test("keystone: findEndpoint picks by type, interface and region", () => {
  const catalog = [{
    type: "compute",
    name: "nova",
    endpoints: [
      { interface: "public", region: "A", url: "http://a-pub" },
      { interface: "internal", region: "A", url: "http://a-int" },
      { interface: "public", region: "B", url: "http://b-pub" },
    ],
  }];
  assert.equal(
    findEndpoint(catalog, "compute", { interface: "public" }),
    "http://a-pub",
  );
  assert.equal(
    findEndpoint(catalog, "compute", { interface: "public", region: "B" }),
    "http://b-pub",
  );
  assert.equal(
    findEndpoint(catalog, "compute", { interface: "internal" }),
    "http://a-int",
  );
  assert.throws(
    () => findEndpoint(catalog, "compute", { interface: "admin" }),
    /no compute endpoint with interface admin/,
  );
});
