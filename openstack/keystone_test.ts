import assert from "node:assert/strict";
import {
  BASIC_SCENARIO,
  captureLogger,
  fakeClock,
  withSim,
} from "../tests/harness/openstack_util.ts";
import { UnauthorizedError, UnavailableError } from "./errors.ts";
import {
  type AuthOutcome,
  CredentialsRefusedError,
  EndpointNotFoundError,
  findEndpoint,
  KeystoneSession,
} from "./keystone.ts";
import { authRetryDelayMs } from "./backoff.ts";
import type { EndpointInterface } from "./config.ts";
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
      assert.ok(e instanceof CredentialsRefusedError);
      assert.equal(
        e.message,
        `Keystone ${sim.authUrl} refused the credentials of ${c.username} (password): The request you have made requires authentication.`,
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
  }, {
    type: "placement",
    name: "placement",
    endpoints: [{ interface: "public", region: "A", url: "http://a-pl" }],
  }];
  const rows: [string, EndpointInterface, string | undefined, string][] = [
    ["compute", "public", "A", "http://a-pub"],
    // the second of two regions when it is the one asked for
    ["compute", "public", "B", "http://b-pub"],
    ["compute", "internal", "A", "http://a-int"],
    // one region offers it: no region needs to be set
    ["compute", "internal", undefined, "http://a-int"],
    ["placement", "public", undefined, "http://a-pl"],
  ];
  for (const [type, iface, region, url] of rows) {
    assert.equal(
      findEndpoint(catalog, type, {
        interface: iface,
        ...(region === undefined ? {} : { region }),
      }),
      url,
      `${type} ${iface} ${region}`,
    );
  }
  const errors: [string, EndpointInterface, string | undefined, string][] = [
    [
      "compute",
      "public",
      "C",
      'no compute endpoint with interface public in region "C" in the service catalog; the catalog has it in regions "A", "B": expected OS_REGION_NAME (or region_name) naming one of them',
    ],
    [
      "placement",
      "public",
      "B",
      'no placement endpoint with interface public in region "B" in the service catalog; the catalog has it in region "A": expected OS_REGION_NAME (or region_name) naming one of them',
    ],
    [
      "compute",
      "public",
      undefined,
      'the service catalog has a compute endpoint with interface public in several regions ("A", "B") and no region is set: expected OS_REGION_NAME (or region_name) naming one of them',
    ],
    [
      "compute",
      "admin",
      undefined,
      "no compute endpoint with interface admin in the service catalog",
    ],
    [
      "volumev3",
      "public",
      "A",
      'no volumev3 endpoint with interface public in the service catalog (region "A")',
    ],
  ];
  for (const [type, iface, region, message] of errors) {
    assert.throws(
      () =>
        findEndpoint(catalog, type, {
          interface: iface,
          ...(region === undefined ? {} : { region }),
        }),
      (e: unknown) =>
        e instanceof EndpointNotFoundError && e.message === message,
      `${type} ${iface} ${region}`,
    );
  }
});

/** A session with the sim's password user, `password` instead of theirs. */
function sessionFor(
  sim: Awaited<ReturnType<typeof startNovaSim>>,
  password: () => string,
  clock: ReturnType<typeof fakeClock>,
  outcomes: AuthOutcome[],
  logger = captureLogger(),
): KeystoneSession {
  const c = sim.credentials.password;
  // Rewrites the password of each login, so that a test can fix it later.
  const rewriting: typeof fetch = (input, init) => {
    if (String(input).endsWith("/auth/tokens") && init?.body !== undefined) {
      const body = JSON.parse(String(init.body));
      body.auth.identity.password.user.password = password();
      return fetch(input, { ...init, body: JSON.stringify(body) });
    }
    return fetch(input, init);
  };
  return new KeystoneSession({
    authUrl: sim.authUrl,
    auth: { type: "password", ...c },
    fetch: rewriting,
    clock,
    logger,
    onAuthentication: (o) => outcomes.push(o),
  });
}

Deno.test("keystone: refused credentials are remembered: one login per backoff step for every caller", async () => {
  const sim = await startNovaSim(BASIC_SCENARIO);
  try {
    const clock = fakeClock();
    const outcomes: AuthOutcome[] = [];
    const logger = captureLogger();
    const session = sessionFor(sim, () => "wrong", clock, outcomes, logger);
    const nova = new NovaClient(session);
    const logins = () => sim.counters().calls[TOKENS] ?? 0;

    // 10 callers at once share the one failed login.
    const first = await Promise.allSettled(
      Array.from({ length: 10 }, () => nova.listServersOnHost("node001")),
    );
    assert.equal(logins(), 1);
    for (const r of first) {
      assert.equal(r.status, "rejected");
      assert.ok(r.reason instanceof CredentialsRefusedError);
      assert.equal(r.reason.retryAfterMs, 5_000);
    }
    assert.deepEqual(outcomes, [
      { ok: false, refused: true, failures: 1, retryInMs: 5_000 },
    ]);
    assert.equal(session.credentialsRefused, true);
    const warned = logger.lines.filter((l) => /REFUSED/.test(l.msg ?? ""));
    assert.equal(warned.length, 1);
    assert.equal(warned[0]?.obj["username"], sim.credentials.password.username);

    // During the backoff: the same error for everyone, no login, the wait left.
    clock.advance(4_000);
    for (let i = 0; i < 20; i++) {
      await assert.rejects(nova.listServersOnHost("node001"), (e: unknown) => {
        assert.ok(e instanceof CredentialsRefusedError);
        assert.equal(e.retryAfterMs, 1_000);
        assert.equal(
          e.message,
          (first[0] as PromiseRejectedResult).reason.message,
        );
        return true;
      });
    }
    assert.equal(logins(), 1);

    // Each step lets exactly one login through; the steps double.
    for (let failures = 1; failures <= 8; failures++) {
      clock.advance(authRetryDelayMs(failures) - (failures === 1 ? 4_000 : 0));
      await Promise.allSettled(
        Array.from({ length: 10 }, () => session.token()),
      );
      assert.equal(logins(), failures + 1, `after step ${failures}`);
    }
    assert.equal(outcomes.length, 9);
    assert.deepEqual(outcomes.at(-1), {
      ok: false,
      refused: true,
      failures: 9,
      retryInMs: 300_000,
    });
  } finally {
    await sim.close();
  }
});

Deno.test("keystone: a success after refusals ends the backoff and reports ok", async () => {
  const sim = await startNovaSim(BASIC_SCENARIO);
  try {
    const clock = fakeClock();
    const outcomes: AuthOutcome[] = [];
    let password = "wrong";
    const right = sim.credentials.password.password;
    const session = sessionFor(sim, () => password, clock, outcomes);
    const logins = () => sim.counters().calls[TOKENS] ?? 0;
    await assert.rejects(session.token(), CredentialsRefusedError);
    clock.advance(5_000);
    await assert.rejects(session.token(), CredentialsRefusedError);
    assert.equal(logins(), 2);
    // Fixed, but the backoff (10 s now) still holds the next login back.
    password = right;
    clock.advance(9_999);
    await assert.rejects(session.token(), CredentialsRefusedError);
    assert.equal(logins(), 2);
    clock.advance(1);
    assert.ok((await session.token()).value);
    assert.equal(session.credentialsRefused, false);
    assert.deepEqual(outcomes.map((o) => o.ok), [false, false, true]);
    // A later refusal starts again at the first step.
    session.invalidate();
    password = "wrong-again";
    await assert.rejects(session.token(), (e: unknown) => {
      assert.ok(e instanceof CredentialsRefusedError);
      assert.equal(e.retryAfterMs, 5_000);
      assert.equal(e.failures, 1);
      return true;
    });
  } finally {
    await sim.close();
  }
});

Deno.test("keystone: an unreachable Keystone is backed off too, as Unavailable", async () => {
  const clock = fakeClock();
  const outcomes: AuthOutcome[] = [];
  let calls = 0;
  const session = new KeystoneSession({
    authUrl: "http://127.0.0.1:9/v3",
    auth: {
      type: "v3applicationcredential",
      applicationCredentialId: "id",
      applicationCredentialSecret: "s",
    },
    fetch: () => {
      calls++;
      return Promise.reject(new TypeError("connection refused"));
    },
    clock,
    retry: { maxAttempts: 2 },
    onAuthentication: (o) => outcomes.push(o),
  });
  await assert.rejects(session.token(), (e: unknown) => {
    assert.ok(e instanceof UnavailableError);
    assert.ok(!(e instanceof CredentialsRefusedError));
    assert.match(
      e.message,
      /authenticating with Keystone http:\/\/127\.0\.0\.1:9\/v3 failed: .*connection refused/,
    );
    assert.equal(e.retryAfterMs, 5_000);
    return true;
  });
  assert.equal(calls, 2); // the transport's own retry of one attempt
  await assert.rejects(session.token(), UnavailableError);
  assert.equal(calls, 2);
  assert.equal(session.credentialsRefused, false);
  assert.deepEqual(outcomes, [
    { ok: false, refused: false, failures: 1, retryInMs: 5_000 },
  ]);
});
