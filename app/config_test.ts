import assert from "node:assert/strict";
import fc from "fast-check";
import { ConfigFlagError, loadConfig, RUN_FLAGS, runHelp } from "./config.ts";
import { parseDuration } from "./duration.ts";

Deno.test("defaults", () => {
  const c = loadConfig([], {});
  assert.equal(c.pollIntervalMs, 2000);
  assert.equal(c.novaTimeoutMs, 30_000);
  assert.equal(c.migrationRetryWindowMs, 3_600_000);
  assert.equal(c.migrationRetryBackoffMs, 30_000);
  assert.equal(c.leaderElection, false);
  assert.deepEqual(c.controllers, [
    "eviction",
    "hypervisor-sync",
    "maintenance",
  ]);
  assert.equal(c.healthProbeAddress, ":8081");
  assert.deepEqual(c.metrics, {
    address: ":8443",
    certDir: "/etc/evictor/webhook-certs",
  });
  assert.deepEqual(c.webhook, {
    address: ":9443",
    certDir: "/etc/evictor/webhook-certs",
  });
  assert.equal(c.limits.source, "flags");
  assert.equal(c.limits.spec.maxConcurrentMigrations, 1);
  assert.ok(Object.isFrozen(c) && Object.isFrozen(c.controllers));
});

Deno.test("flags win over their environment twins", () => {
  const env = { EVICTOR_POLL_INTERVAL: "5s", KUBECONFIG: "/etc/evictor/kc" };
  assert.equal(loadConfig([], env).pollIntervalMs, 5000);
  assert.deepEqual(loadConfig([], env).kubeconfig, ["/etc/evictor/kc"]);
  assert.equal(
    loadConfig(["--poll-interval", "250ms"], env).pollIntervalMs,
    250,
  );
});

Deno.test("--kubeconfig names one file, KUBECONFIG a colon-separated list", () => {
  const env = { KUBECONFIG: "/home/me/.kube/config::/home/me/.kube/eu" };
  assert.deepEqual(loadConfig([], env).kubeconfig, [
    "/home/me/.kube/config",
    "/home/me/.kube/eu",
  ]);
  assert.deepEqual(loadConfig(["--kubeconfig", "/a:b"], env).kubeconfig, [
    "/a:b",
  ]);
  assert.equal(loadConfig([], {}).kubeconfig, undefined);
  assert.equal(loadConfig([], { KUBECONFIG: ":" }).kubeconfig, undefined);
});

Deno.test("every flag has an environment twin and help", () => {
  for (const [name, spec] of Object.entries(RUN_FLAGS)) {
    assert.ok(spec.env.length > 0, name);
    assert.ok(runHelp().includes(`--${name}`), name);
    assert.ok(runHelp().includes(`[env ${spec.env}]`), name);
  }
});

Deno.test("leader election and concurrency flags", () => {
  const c = loadConfig([
    "--leader-elect",
    "--eviction-concurrency=4",
    "--eviction-trait-concurrency=CUSTOM_HANA_EXCLUSIVE_HOST=1",
    "--eviction-trait-concurrency",
    "CUSTOM_A=2,CUSTOM_B=3",
    "--controllers=eviction",
  ], { POD_NAMESPACE: "evictor-system", POD_NAME: "evictor-0" });
  assert.deepEqual(c.leaderElection, {
    namespace: "evictor-system",
    leaseName: "evictor",
    identity: "evictor-0",
    leaseDurationMs: 15000,
    renewDeadlineMs: 10000,
    retryPeriodMs: 2000,
  });
  assert.equal(c.limits.spec.maxConcurrentMigrations, 4);
  assert.deepEqual(
    c.limits.spec.traitLimits?.map((t) => [t.trait, t.maxConcurrentMigrations]),
    [["CUSTOM_HANA_EXCLUSIVE_HOST", 1], ["CUSTOM_A", 2], ["CUSTOM_B", 3]],
  );
  assert.deepEqual(c.controllers, ["eviction"]);
});

Deno.test("--eviction-convergence and its environment twin give the default convergence", () => {
  const c = loadConfig([
    "--eviction-convergence=completionTimeoutPerGiB=600,onTimeout=Abort",
  ], {});
  assert.deepEqual(c.limits.spec.convergence, {
    completionTimeoutPerGiB: 600,
    onTimeout: "Abort",
  });
  const e = loadConfig([], {
    EVICTOR_EVICTION_CONVERGENCE: "progressTimeoutSeconds=300",
  });
  assert.deepEqual(e.limits.spec.convergence, { progressTimeoutSeconds: 300 });
});

Deno.test("bad flags: one error naming the flag, the value and what is expected", () => {
  const rows: [string[], Record<string, string>, Partial<ConfigFlagError>][] = [
    [["--poll-interval", "soon"], {}, {
      flag: "--poll-interval",
      value: "soon",
      expected: "a duration of at least 100 ms, like 500ms, 2s or 5m",
    }],
    [[], { EVICTOR_POLL_INTERVAL: "2 seconds" }, {
      flag: "--poll-interval",
      envVar: "EVICTOR_POLL_INTERVAL",
      value: "2 seconds",
    }],
    [["--controllers", "eviction,evacuation"], {}, {
      flag: "--controllers",
      value: "eviction,evacuation",
      expected:
        "a comma-separated list of eviction, hypervisor-sync, maintenance",
    }],
    [["--leader-elect"], {}, {
      flag: "--leader-election-namespace",
      envVar: "POD_NAMESPACE",
    }],
    [["--metrics-bind-address", "8080"], {}, {
      flag: "--metrics-bind-address",
      value: "8080",
    }],
    [["--log-level", "loud"], {}, { flag: "--log-level", value: "loud" }],
    [["--lease-duration", "5s"], {}, { flag: "--renew-deadline" }],
    [["--max-concurrent-reconciles", "0"], {}, {
      flag: "--max-concurrent-reconciles",
      value: "0",
      expected: "an integer from 1 to 256",
    }],
    [[], { EVICTOR_LEADER_ELECT: "yes" }, {
      flag: "--leader-elect",
      envVar: "EVICTOR_LEADER_ELECT",
      expected: "true, false, 1 or 0",
    }],
    [["--no-such-flag"], {}, { flag: "(command line)" }],
    [["--eviction-concurrency", "0"], {}, {
      flag: "--eviction-concurrency",
    }],
    [["--eviction-trait-concurrency", "CUSTOM_A"], {}, {
      flag: "--eviction-trait-concurrency",
    }],
    [[], { EVICTOR_EVICTION_CONVERGENCE: "onTimeout=Pause" }, {
      flag: "--eviction-convergence",
      value: "Pause",
      expected: "one of Report, Abort, ForceComplete",
    }],
  ];
  for (const [args, env, expected] of rows) {
    let error: unknown;
    try {
      loadConfig(args, env);
    } catch (e) {
      error = e;
    }
    assert.ok(error instanceof ConfigFlagError, `${args.join(" ")}: ${error}`);
    for (const [key, value] of Object.entries(expected)) {
      assert.deepEqual(
        (error as unknown as Record<string, unknown>)[key],
        value,
        `${args.join(" ")} ${JSON.stringify(env)}: ${key}`,
      );
    }
    assert.ok(!error.message.includes("\n"), "one line");
  }
});

Deno.test("a bad trait entry is a structured field, not part of the message", () => {
  const entry = "CUSTOM_X=abc";
  try {
    loadConfig(["--eviction-trait-concurrency", entry], {});
    assert.fail("accepted");
  } catch (e) {
    assert.ok(e instanceof ConfigFlagError);
    assert.equal(e.fields["entry"], entry);
    assert.ok(!e.message.includes(entry));
  }
});

Deno.test("parseDuration: table and round trip", () => {
  const rows: [string, number | undefined][] = [
    ["500ms", 500],
    ["2s", 2000],
    ["1.5m", 90000],
    ["1h", 3600000],
    ["2", undefined],
    ["-1s", undefined],
    ["s", undefined],
  ];
  for (const [text, ms] of rows) assert.equal(parseDuration(text), ms, text);
  fc.assert(fc.property(fc.nat(10_000_000), (ms) => {
    assert.equal(parseDuration(`${ms}ms`), ms);
  }));
});

Deno.test("the Deployment's arguments are flags evictor accepts", async () => {
  const { parse } = await import("yaml");
  const deployment = parse(
    await Deno.readTextFile(
      new URL("../manifests/manager/deployment.yaml", import.meta.url),
    ),
  ) as {
    spec: {
      template: { spec: { containers: { args: string[] }[] } };
    };
  };
  const [command, ...args] =
    deployment.spec.template.spec.containers[0]?.args ?? [];
  assert.equal(command, "run");
  // $(POD_NAMESPACE) is expanded by the kubelet.
  const config = loadConfig(
    args.map((a) => a.replace("$(POD_NAMESPACE)", "evictor-system")),
    {},
  );
  assert.deepEqual(config.metrics, {
    address: ":8443",
    certDir: "/etc/evictor/webhook-certs",
  });
  assert.equal(config.healthProbeAddress, ":8081");
  assert.notEqual(config.leaderElection, false);
});

Deno.test("--nova-timeout and --migration-retry-window", () => {
  const c = loadConfig([
    "--nova-timeout=5s",
    "--migration-retry-window",
    "0ms",
  ], {});
  assert.equal(c.novaTimeoutMs, 5000);
  assert.equal(c.migrationRetryWindowMs, 0);
  assert.throws(
    () => loadConfig(["--nova-timeout", "10ms"], {}),
    (e: unknown) =>
      e instanceof ConfigFlagError && e.message.includes("--nova-timeout"),
  );
});

Deno.test("--migration-retry-backoff: a duration of at least 100ms", () => {
  const c = loadConfig(["--migration-retry-backoff=1500ms"], {});
  assert.equal(c.migrationRetryBackoffMs, 1500);
  assert.equal(
    loadConfig([], { EVICTOR_MIGRATION_RETRY_BACKOFF: "2m" })
      .migrationRetryBackoffMs,
    120_000,
  );
  assert.throws(
    () => loadConfig(["--migration-retry-backoff", "10ms"], {}),
    (e: unknown) =>
      e instanceof ConfigFlagError &&
      e.message.includes("--migration-retry-backoff"),
  );
});

Deno.test("--migration-progress-interval: default 30s, 0 (off) or at least 1s, one line naming a bad value", () => {
  assert.equal(loadConfig([], {}).migrationProgressIntervalMs, 30_000);
  for (const off of ["0s", "0"]) {
    assert.equal(
      loadConfig([`--migration-progress-interval=${off}`], {})
        .migrationProgressIntervalMs,
      0,
      off,
    );
  }
  assert.equal(
    loadConfig(["--migration-progress-interval=1m"], {})
      .migrationProgressIntervalMs,
    60_000,
  );
  assert.equal(
    loadConfig([], { EVICTOR_MIGRATION_PROGRESS_INTERVAL: "10s" })
      .migrationProgressIntervalMs,
    10_000,
  );
  for (const bad of ["often", "500ms"]) {
    assert.throws(
      () => loadConfig(["--migration-progress-interval", bad], {}),
      (e: unknown) =>
        e instanceof ConfigFlagError &&
        e.flag === "--migration-progress-interval" && e.value === bad &&
        !e.message.includes("\n"),
    );
  }
});

Deno.test("--default-migration-rate, --default-migration-overhead and --default-drain-overhead", () => {
  const defaults = loadConfig([], {}).defaultMigrationRate;
  assert.deepEqual(defaults, {
    mbPerSecond: 1000,
    overheadSeconds: 5,
    fixedSeconds: 10,
  });
  const c = loadConfig([
    "--default-migration-rate=8000",
    "--default-migration-overhead=175ms",
    "--default-drain-overhead=7.5s",
  ], {});
  assert.deepEqual(c.defaultMigrationRate, {
    mbPerSecond: 8000,
    overheadSeconds: 0.175,
    fixedSeconds: 7.5,
  });
  assert.equal(
    loadConfig([], { EVICTOR_DEFAULT_MIGRATION_RATE: "250.5" })
      .defaultMigrationRate.mbPerSecond,
    250.5,
  );
  for (const bad of ["0", "-3", "fast", "Infinity"]) {
    assert.throws(
      () => loadConfig([`--default-migration-rate=${bad}`], {}),
      (e: unknown) =>
        e instanceof ConfigFlagError &&
        e.flag === "--default-migration-rate" && e.value === bad &&
        e.expected === "MB per second, a number > 0",
      bad,
    );
  }
  assert.throws(
    () => loadConfig(["--default-migration-overhead=soon"], {}),
    (e: unknown) =>
      e instanceof ConfigFlagError &&
      e.flag === "--default-migration-overhead" && e.value === "soon",
  );
  assert.throws(
    () => loadConfig(["--default-drain-overhead=-2s"], {}),
    (e: unknown) =>
      e instanceof ConfigFlagError &&
      e.flag === "--default-drain-overhead" && e.value === "-2s",
  );
});

Deno.test("--drain-settle: default 6s, 0 allowed, its env twin", () => {
  assert.equal(loadConfig([], {}).drainSettleMs, 6000);
  assert.equal(loadConfig(["--drain-settle=0s"], {}).drainSettleMs, 0);
  assert.equal(
    loadConfig([], { EVICTOR_DRAIN_SETTLE: "20s" }).drainSettleMs,
    20_000,
  );
  assert.throws(
    () => loadConfig(["--drain-settle", "later"], {}),
    (e: unknown) =>
      e instanceof ConfigFlagError && e.message.includes("--drain-settle"),
  );
});

Deno.test("--nova-notifications-relist: 30 poll intervals by default, its env twin, at least the poll interval", () => {
  assert.equal(loadConfig([], {}).novaNotificationsRelistMs, 60_000);
  assert.equal(
    loadConfig(["--poll-interval=1s"], {}).novaNotificationsRelistMs,
    30_000,
  );
  assert.equal(
    loadConfig(["--nova-notifications-relist=2m"], {})
      .novaNotificationsRelistMs,
    120_000,
  );
  assert.equal(
    loadConfig([], { EVICTOR_NOVA_NOTIFICATIONS_RELIST: "90s" })
      .novaNotificationsRelistMs,
    90_000,
  );
  for (const bad of ["1s", "soon"]) {
    assert.throws(
      () => loadConfig([`--nova-notifications-relist=${bad}`], {}),
      (e: unknown) =>
        e instanceof ConfigFlagError &&
        e.flag === "--nova-notifications-relist" && e.value === bad &&
        e.expected.includes("at least 2000 ms"),
    );
  }
});

Deno.test("--nova-notifications-url: off by default, a URL or a file, never echoed", () => {
  assert.equal(loadConfig([], {}).novaNotifications, undefined);
  assert.deepEqual(
    loadConfig(["--nova-notifications-url", "amqp://nova:pw@rabbit:5672/"], {})
      .novaNotifications,
    { url: "amqp://nova:pw@rabbit:5672/" },
  );
  assert.deepEqual(
    loadConfig([], {
      EVICTOR_NOVA_NOTIFICATIONS_URL: "amqps://nova:pw@rabbit/nova",
    }).novaNotifications,
    { url: "amqps://nova:pw@rabbit/nova" },
  );
  assert.deepEqual(
    loadConfig([], {
      EVICTOR_NOVA_NOTIFICATIONS_URL_FILE: "/etc/evictor/notifications/url",
    }).novaNotifications,
    { urlFile: "/etc/evictor/notifications/url" },
  );
  const bad = (args: string[], env: Record<string, string> = {}) => {
    try {
      loadConfig(args, env);
    } catch (e) {
      assert.ok(e instanceof ConfigFlagError);
      return e;
    }
    throw new Error(`accepted ${args.join(" ")}`);
  };
  const http = bad([], {
    EVICTOR_NOVA_NOTIFICATIONS_URL: "http://nova:hunter2@rabbit/",
  });
  assert.equal(http.flag, "--nova-notifications-url");
  assert.equal(http.envVar, "EVICTOR_NOVA_NOTIFICATIONS_URL");
  assert.equal(http.value, "http://nova:***@rabbit/");
  assert.match(http.message, /got scheme "http"/);
  assert.ok(!JSON.stringify({ ...http, m: http.message }).includes("hunter2"));
  const both = bad([
    "--nova-notifications-url",
    "amqp://h/",
    "--nova-notifications-url-file",
    "/etc/evictor/url",
  ]);
  assert.match(both.message, /exclude each other/);
  assert.equal(both.value, undefined);
});

Deno.test("the notification feed's exchange, heartbeat and size limit: defaults, flags, env twins", () => {
  assert.deepEqual(loadConfig([], {}).novaNotificationsFeed, {
    exchange: "nova",
    heartbeatSeconds: 5,
    maxMessageBytes: 1048576,
  });
  assert.deepEqual(
    loadConfig([
      "--nova-notifications-exchange=nova-eu.1",
      "--nova-notifications-heartbeat=1m",
      "--nova-notifications-max-message-bytes=1024",
    ], {}).novaNotificationsFeed,
    { exchange: "nova-eu.1", heartbeatSeconds: 60, maxMessageBytes: 1024 },
  );
  assert.deepEqual(
    loadConfig([], {
      EVICTOR_NOVA_NOTIFICATIONS_EXCHANGE: "openstack",
      EVICTOR_NOVA_NOTIFICATIONS_HEARTBEAT: "2s",
      EVICTOR_NOVA_NOTIFICATIONS_MAX_MESSAGE_BYTES: "134217728",
    }).novaNotificationsFeed,
    { exchange: "openstack", heartbeatSeconds: 2, maxMessageBytes: 134217728 },
  );
});

Deno.test("the notification feed's flags: a bad value is one error naming the flag and the value", () => {
  const table: [string, string, RegExp][] = [
    ["nova-notifications-exchange", "amq.topic", /not amq\.\*/],
    ["nova-notifications-exchange", "nova exchange", /exchange name/],
    ["nova-notifications-exchange", "x".repeat(128), /1 to 127/],
    ["nova-notifications-heartbeat", "0s", /1s to 60s/],
    ["nova-notifications-heartbeat", "1500ms", /whole seconds/],
    ["nova-notifications-heartbeat", "2m", /1s to 60s/],
    ["nova-notifications-heartbeat", "soon", /whole seconds/],
    ["nova-notifications-max-message-bytes", "1023", /1024 to 134217728/],
    ["nova-notifications-max-message-bytes", "1MiB", /number of bytes/],
    ["nova-notifications-max-message-bytes", "134217729", /134217728/],
    ["nova-notifications-max-message-bytes", "-5", /number of bytes/],
  ];
  for (const [flag, value, expected] of table) {
    assert.throws(
      () => loadConfig([`--${flag}=${value}`], {}),
      (e: unknown) =>
        e instanceof ConfigFlagError && e.flag === `--${flag}` &&
        e.value === value && expected.test(e.expected),
      `${flag}=${value}`,
    );
  }
});
