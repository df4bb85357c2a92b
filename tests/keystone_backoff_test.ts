/**
 * No login storms: with a wrong password, 10 Hypervisors reconciled by the
 * real operator (real API server, the Nova simulator's Keystone) cause at
 * most one Keystone login per backoff step, and the refusal shows as a
 * Warning Event on every Hypervisor and in the metrics.
 *
 * The backoff is production's shape scaled down 20 times (250 ms doubling
 * to 15 s instead of 5 s to 5 minutes), so 3 seconds here stand for a
 * minute. A second test runs the real program (`main.ts run` with the
 * binary's permissions) to check the wiring: the metrics read 0 from
 * start-up and turn with a refusal.
 */
import assert from "node:assert/strict";
import { registerHypervisorSync } from "../controllers/hypervisor/mod.ts";
import {
  authRetryDelayMs,
  KeystoneSession,
  NovaClient,
  PlacementClient,
  silentLogger,
} from "../openstack/mod.ts";
import {
  AUTH_FAILURES_METRIC,
  CREDENTIALS_REFUSED_METRIC,
  OpenStackAuthMetrics,
} from "../app/openstack_metrics.ts";
import {
  INTEGRATION,
  startHvHarness,
  uniq,
  waitFor,
} from "./_hypervisor_util.ts";
import { sharedEnvtest } from "./harness/envtest.ts";
import { startNovaSim } from "./harness/nova_sim/mod.ts";
import {
  operatorLogTail,
  startOperatorProcess,
} from "./harness/operator_process.ts";
import { freePort } from "./harness/processes.ts";

const TOKENS = "POST /identity/v3/auth/tokens";
const SCALE = 20;
const BACKOFF = { initialMs: 5_000 / SCALE, maxMs: 300_000 / SCALE };
const WINDOW_MS = 60_000 / SCALE;
const HOSTS = 10;

/** Logins the backoff allows within `elapsedMs` of the first one. */
function allowedLogins(elapsedMs: number): number {
  let logins = 1;
  let at = 0;
  for (let failures = 1;; failures++) {
    at += authRetryDelayMs(failures, BACKOFF);
    if (at > elapsedMs) return logins;
    logins++;
  }
}

Deno.test({
  name:
    "keystone backoff: a wrong password, 10 Hypervisors, a (scaled) minute: one login per backoff step, an Event on each, the metrics",
  ...INTEGRATION,
  fn: async () => {
    const prefix = uniq("kb");
    const hosts = Array.from({ length: HOSTS }, (_, i) => `${prefix}-${i}`);
    const h = await startHvHarness({ hosts: hosts.map((name) => ({ name })) });
    try {
      const c = h.sim.credentials.password;
      const metrics = new OpenStackAuthMetrics();
      const session = new KeystoneSession({
        authUrl: h.sim.authUrl,
        auth: { type: "password", ...c, password: "wrong" },
        regionName: h.sim.credentials.region,
        logger: silentLogger,
        timeoutMs: 5_000,
        authBackoff: BACKOFF,
        onAuthentication: metrics.observe,
      });
      const op = h.operator();
      metrics.register(op.metrics.registry);
      registerHypervisorSync(op, {
        nova: new NovaClient(session),
        placement: new PlacementClient(session),
        resyncIntervalMs: 60_000,
        discover: false,
      });
      for (const name of hosts) await h.createHypervisor(name);
      h.sim.resetCounters();

      const started = Date.now();
      await op.start();
      await new Promise((r) =>
        setTimeout(r, WINDOW_MS - (Date.now() - started))
      );
      const logins = h.sim.counters().calls[TOKENS] ?? 0;
      const elapsed = Date.now() - started;
      const allowed = allowedLogins(elapsed);
      assert.ok(
        logins <= allowed,
        `${logins} logins in ${elapsed} ms; the backoff allows ${allowed}`,
      );
      // It keeps trying, one login per step, and never calls Nova.
      assert.ok(logins >= 2, `only ${logins} login(s) in ${elapsed} ms`);
      assert.equal(
        h.sim.counters().calls["GET /compute/v2.1/os-hypervisors/detail"],
        undefined,
      );

      const text = await op.metrics.registry.metrics();
      assert.match(text, new RegExp(`^${CREDENTIALS_REFUSED_METRIC} 1$`, "m"));
      const failures = Number(
        new RegExp(`^${AUTH_FAILURES_METRIC} (\\d+)$`, "m").exec(text)?.[1],
      );
      assert.equal(failures, h.sim.counters().calls[TOKENS]);

      // Every Hypervisor says why in a Warning Event.
      await waitFor(
        "a CredentialsRefused Event on every Hypervisor",
        async () => {
          const got = await h.env.kubectl([
            "get",
            "events",
            "-A",
            "--field-selector",
            "reason=CredentialsRefused,involvedObject.kind=Hypervisor",
            "-o",
            "json",
          ]);
          assert.equal(got.code, 0, got.stderr);
          const items = (JSON.parse(got.stdout) as {
            items: Array<{
              type: string;
              message: string;
              involvedObject: { name: string };
            }>;
          }).items.filter((e) => hosts.includes(e.involvedObject.name));
          for (const e of items) {
            assert.equal(e.type, "Warning");
            assert.match(e.message, /refused the credentials of/);
            assert.doesNotMatch(e.message, /wrong/);
          }
          return new Set(items.map((e) => e.involvedObject.name)).size ===
            HOSTS;
        },
      );
    } finally {
      await h.close();
    }
  },
});

/** The value of an unlabelled metric on a /metrics page. */
function metricValue(text: string, name: string): number | undefined {
  const m = new RegExp(`^${name} (\\S+)$`, "m").exec(text);
  return m === null ? undefined : Number(m[1]);
}

Deno.test({
  name:
    "keystone backoff: the real program shows the metrics at 0 from start-up, then the refusal in the metrics, the log and an Event",
  ...INTEGRATION,
  fn: async () => {
    const env = await sharedEnvtest();
    const label = uniq("kbp");
    const host = `${label}-host`;
    const sim = await startNovaSim({ hosts: [{ name: host }] });
    const cloudsYaml = sim.cloudsYaml({ cloud: "wrong" }).replace(
      /^( +password: ).*$/m,
      '$1"wrong-password"',
    );
    assert.match(cloudsYaml, /password: "wrong-password"/);
    const port = freePort();
    const op = await startOperatorProcess({
      kubeconfigPath: env.kubeconfigPath,
      cloudsYaml,
      cloud: "wrong",
      args: [
        `--label-selector=evictor-test=${label}`,
        "--controllers=hypervisor-sync",
        "--webhook-bind-address=0",
        `--metrics-bind-address=127.0.0.1:${port}`,
        "--insecure-metrics", // a plain scrape; tests/deploy_test.ts covers the secured one
      ],
    });
    const scrape = async () => {
      const res = await fetch(`http://127.0.0.1:${port}/metrics`);
      return await res.text();
    };
    try {
      // Nothing reconciled yet: no login, both metrics present at 0.
      const first = await waitFor("/metrics", () => scrape(), 30_000)
        .catch(async (err) => {
          throw new Error(`${err}\n${await operatorLogTail(op)}`);
        });
      assert.equal(metricValue(first, AUTH_FAILURES_METRIC), 0, first);
      assert.equal(metricValue(first, CREDENTIALS_REFUSED_METRIC), 0, first);
      assert.equal(sim.counters().calls[TOKENS], undefined);

      await env.kubectl(["create", "-f", "-"], {
        stdin: JSON.stringify({
          apiVersion: "kvm.cloud.sap/v1",
          kind: "Hypervisor",
          metadata: { name: host, labels: { "evictor-test": label } },
          spec: {},
        }),
      });
      const refused = await waitFor("the refusal in the metrics", async () => {
        const text = await scrape();
        return metricValue(text, CREDENTIALS_REFUSED_METRIC) === 1 && text;
      });
      assert.equal(
        metricValue(refused, AUTH_FAILURES_METRIC),
        sim.counters().calls[TOKENS],
      );
      const lines = (await op.log()).split("\n").filter((l: string) =>
        /REFUSED the credentials/.test(l)
      );
      assert.ok(lines.length >= 1, await operatorLogTail(op));
      assert.doesNotMatch(lines.join("\n"), /wrong-password/);
      await waitFor(
        "a CredentialsRefused Event on the Hypervisor",
        async () => {
          const got = await env.kubectl([
            "get",
            "events",
            "-A",
            "--field-selector",
            `reason=CredentialsRefused,involvedObject.name=${host}`,
            "-o",
            "name",
          ]);
          return got.code === 0 && got.stdout.trim() !== "";
        },
      );
    } finally {
      await op.stop();
      await env.kubectl(["delete", "hypervisor", host, "--wait=false"]);
      await sim.close();
    }
  },
});
