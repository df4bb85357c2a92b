/**
 * `manifests/monitoring/`: the PrometheusRule passes the real promtool's
 * `check rules` and `test rules` (promtool built from hack/promtool/go.mod's
 * pin on first use; each alert fires on synthetic series,
 * tests/testdata/monitoring/alerts_test.yaml), every alert links to a
 * section of docs/runbooks.md, and every metric a rule or a dashboard panel reads exists:
 * evictor's in the `/metrics` of a running evictor (main.ts as a process with
 * the binary's permissions), `apiserver_*` in the real API server's after it
 * called evictor's webhook.
 */
import assert from "node:assert/strict";
import { parse as parseYaml, stringify as stringifyYaml } from "yaml";
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
} from "./harness/operator_process.ts";
import { freePort, makeOwnedTempDir } from "./harness/processes.ts";
import { prometheusOperatorCrds, promtool } from "./harness/hack_tools.ts";
import { rabbitMqMissing, sharedRabbitMq } from "./harness/rabbitmq.ts";
import {
  eviction,
  hypervisor,
  manifest,
  policy,
  webhookConfigurationYaml,
} from "./_webhook_fixture.ts";
import {
  dashboard,
  dashboardQueries,
  exposes,
  headingAnchors,
  metricFamilies,
  metricNames,
  metricSum,
  ruleGroups,
  samples,
  satisfiesPositive,
  scrapeMetrics,
  selectors,
} from "./_monitoring.ts";

const ROOT = new URL("../", import.meta.url);
const TESTDATA = new URL("testdata/monitoring/", import.meta.url);

/** Runs the pinned promtool (tests/harness/hack_tools.ts) in `cwd`. */
async function runPromtool(args: string[], cwd: string) {
  const out = await new Deno.Command(await promtool(), {
    args,
    cwd,
    stdout: "piped",
    stderr: "piped",
  }).output();
  const text = new TextDecoder();
  return {
    code: out.code,
    output: text.decode(out.stdout) + text.decode(out.stderr),
  };
}

/** The rule groups as a rules file, and the unit tests beside it. */
async function stageRules(): Promise<string> {
  const dir = await Deno.makeTempDir({ prefix: "evictor-rules-" });
  await Deno.writeTextFile(
    `${dir}/rules.yaml`,
    stringifyYaml({ groups: await ruleGroups() }),
  );
  await Deno.copyFile(
    new URL("alerts_test.yaml", TESTDATA),
    `${dir}/alerts_test.yaml`,
  );
  return dir;
}

async function alertNames(): Promise<string[]> {
  return (await ruleGroups()).flatMap((g) => g.rules.map((r) => r.alert));
}

Deno.test("promtool check rules accepts the PrometheusRule's groups", async () => {
  const dir = await stageRules();
  try {
    const out = await runPromtool(["check", "rules", "rules.yaml"], dir);
    assert.equal(out.code, 0, out.output);
    const rules = (await ruleGroups()).flatMap((g) => g.rules).length;
    assert.match(out.output, new RegExp(`SUCCESS: ${rules} rules found`));
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});

Deno.test("promtool test rules: every alert fires on its synthetic series", async () => {
  const dir = await stageRules();
  try {
    const out = await runPromtool(["test", "rules", "alerts_test.yaml"], dir);
    assert.equal(out.code, 0, out.output);
    assert.match(out.output, /SUCCESS/);
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
  // Each alert has a case where it fires and one where it must not.
  const tests = parseYaml(
    await Deno.readTextFile(new URL("alerts_test.yaml", TESTDATA)),
  ) as {
    tests: {
      alert_rule_test?: { alertname: string; exp_alerts?: unknown[] }[];
    }[];
  };
  const cases = tests.tests.flatMap((t) => t.alert_rule_test ?? []);
  for (const name of await alertNames()) {
    const mine = cases.filter((c) => c.alertname === name);
    assert.ok(
      mine.some((c) => (c.exp_alerts ?? []).length > 0),
      `no promtool case fires ${name}`,
    );
    assert.ok(
      mine.some((c) => (c.exp_alerts ?? []).length === 0),
      `no promtool case shows ${name} silent`,
    );
  }
});

Deno.test("a changed threshold fails promtool test rules", async () => {
  // The unit tests pin the rules' behaviour: a rule that pages later (or
  // never) must not pass them.
  const dir = await stageRules();
  try {
    const groups = await ruleGroups();
    for (const g of groups) {
      for (const r of g.rules) {
        if (r.for !== undefined) r.for = "3h";
      }
    }
    await Deno.writeTextFile(
      `${dir}/rules.yaml`,
      stringifyYaml({ groups }),
    );
    const out = await runPromtool(["test", "rules", "alerts_test.yaml"], dir);
    assert.notEqual(out.code, 0, out.output);
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});

Deno.test("every alert has a summary, a description and a runbook in docs/runbooks.md", async () => {
  const runbooks = await Deno.readTextFile(new URL("docs/runbooks.md", ROOT));
  const anchors = headingAnchors(runbooks);
  // The repository the image names as its source.
  const dockerfile = await Deno.readTextFile(new URL("Dockerfile", ROOT));
  const source: string =
    /org\.opencontainers\.image\.source="([^"]+)"/.exec(dockerfile)?.[1] ?? "";
  assert.ok(source !== "", "the Dockerfile names no image source");
  const prefix = `${source}/blob/main/docs/runbooks.md#`;
  for (const g of await ruleGroups()) {
    for (const r of g.rules) {
      const a = r.annotations ?? {};
      assert.ok(a["summary"], `${r.alert}: no summary`);
      assert.ok(a["description"], `${r.alert}: no description`);
      const url = a["runbook_url"] ?? "";
      assert.ok(url.startsWith(prefix), `${r.alert}: runbook_url ${url}`);
      const anchor = url.slice(prefix.length);
      assert.ok(
        anchors.has(anchor),
        `${r.alert}: docs/runbooks.md has no #${anchor}`,
      );
      assert.ok(
        ["warning", "critical"].includes(r.labels?.["severity"] ?? ""),
        `${r.alert}: severity`,
      );
    }
  }
});

Deno.test("metricNames reads the metric names of PromQL", () => {
  const table: [string, string[]][] = [
    ["up", ["up"]],
    ['rate(a_total{code!~"2..",x="{b}"}[5m])', ["a_total"]],
    ["sum by (le, kind) (rate(h_bucket[$__rate_interval]))", ["h_bucket"]],
    ["sum(x) without (pod) / on (ns) group_left (y) z", ["x", "z"]],
    ["a unless a offset 1h", ["a"]],
    ["count(g > 0) or vector(0)", ["g"]],
    ["histogram_quantile(0.99, sum by (le) (rate(s_bucket[1m]))) > 1e3", [
      "s_bucket",
    ]],
    ["max_over_time(g[15m:1m]) > bool 0 and on () absent(l)", ["g", "l"]],
    ["vector($budget)", []],
    ["sum(rate(a[5m])) BY (x)", ["a"]],
  ];
  for (const [expr, want] of table) {
    assert.deepEqual([...metricNames(expr)].sort(), want.sort(), expr);
  }
});

Deno.test("selectors and samples read label matchers and exposition lines", () => {
  const [sel] = selectors('sum(rate(a_total{x="1",y=~"b|c",z!="q}"}[5m]))');
  assert.deepEqual(sel, {
    name: "a_total",
    matchers: [
      { label: "x", op: "=", value: "1" },
      { label: "y", op: "=~", value: "b|c" },
      { label: "z", op: "!=", value: "q}" },
    ],
  });
  const text = '# TYPE a_total counter\na_total{x="1",y="c",z="q}"} 3\n' +
    'a_total{x="2",y="b"} 1\nb 0\n';
  const found = samples(text);
  assert.deepEqual(found.map((s) => s.name), ["a_total", "a_total", "b"]);
  assert.deepEqual(found[0]?.labels, { x: "1", y: "c", z: "q}" });
  assert.deepEqual(
    found.map((s) => sel !== undefined && satisfiesPositive(s, sel)),
    [true, false, false],
  );
});

Deno.test("the dashboard's panels all have queries, the ConfigMap is generated from its JSON", async () => {
  const d = await dashboard();
  const panels = d.panels.filter((p) => p.type !== "row");
  assert.ok(panels.length > 0);
  for (const p of panels) {
    assert.ok((p.targets ?? []).length > 0, `panel ${p.title} has no query`);
  }
  const kustomization = parseYaml(
    await Deno.readTextFile(
      new URL("manifests/monitoring/kustomization.yaml", ROOT),
    ),
  ) as {
    configMapGenerator?: {
      files?: string[];
      options?: { labels?: Record<string, string> };
    }[];
  };
  const gen = kustomization.configMapGenerator?.[0];
  assert.deepEqual(gen?.files, ["evictor-dashboard.json"]);
  assert.equal(gen?.options?.labels?.["grafana_dashboard"], "1");
  // Not applied with evictor itself: it needs the Prometheus operator's CRDs.
  const main = await Deno.readTextFile(
    new URL("manifests/kustomization.yaml", ROOT),
  );
  assert.doesNotMatch(main, /monitoring/);
});

let envPromise: Promise<Envtest> | undefined;
/** A dedicated API server: this file installs a webhook configuration. */
function env(): Promise<Envtest> {
  envPromise ??= startEnvtest();
  return envPromise;
}

async function waitUntil<T>(
  what: string,
  probe: () => Promise<T | undefined>,
  ms = 60_000,
): Promise<T> {
  const deadline = Date.now() + ms;
  for (;;) {
    const value = await probe().catch(() => undefined);
    if (value !== undefined) return value;
    if (Date.now() > deadline) assert.fail(`timed out waiting: ${what}`);
    await new Promise((r) => setTimeout(r, 200));
  }
}

/**
 * The framework's series under controller-runtime's and client-go's names,
 * after a drain against the real API server: each controller's queue took
 * keys and worked them, the API client's reads, writes and creates were
 * answered, in plausible times.
 */
function seriesSayWhatHappened(text: string, apiHost: string): void {
  for (const controller of ["eviction", "hypervisors"]) {
    const q = `{name="${controller}",controller="${controller}"}`;
    const adds = metricSum(text, "workqueue_adds_total", q);
    const taken = metricSum(text, "workqueue_queue_duration_seconds_count", q);
    const worked = metricSum(text, "workqueue_work_duration_seconds_count", q);
    assert.ok(adds > 0, `${controller}: no adds`);
    assert.ok(worked > 0, `${controller}: nothing worked`);
    // a key is taken once per add, worked once per take
    assert.ok(taken <= adds && worked <= taken, `${adds} ${taken} ${worked}`);
    assert.equal(
      metricSum(text, "workqueue_depth", q),
      adds - taken,
      `${controller}: depth`,
    );
    const mean = metricSum(text, "workqueue_work_duration_seconds_sum", q) /
      worked;
    assert.ok(mean > 0 && mean < 30, `${controller}: mean pass ${mean} s`);
    assert.ok(metricSum(text, "workqueue_queue_duration_seconds_sum", q) >= 0);
    for (
      const gauge of [
        "workqueue_unfinished_work_seconds",
        "workqueue_longest_running_processor_seconds",
      ]
    ) {
      assert.ok(text.includes(`${gauge}${q} `), `${controller}: ${gauge}`);
    }
  }
  // controller-runtime's reconcile series: every pass counted by result
  // and timed, the workers' count, none busy at rest; the Lease's holder
  for (const controller of ["eviction", "hypervisors"]) {
    const c = `{controller="${controller}"}`;
    const results = ["success", "error", "requeue", "requeue_after"].map((
      result,
    ) =>
      metricSum(
        text,
        "controller_runtime_reconcile_total",
        `{controller="${controller}",result="${result}"}`,
      )
    );
    const passes = results.reduce((a, b) => a + b, 0);
    assert.ok(passes > 0, `${controller}: no reconciles counted`);
    assert.equal(
      metricSum(text, "controller_runtime_reconcile_time_seconds_count", c),
      passes,
      `${controller}: every pass timed`,
    );
    assert.equal(
      metricSum(text, "controller_runtime_reconcile_errors_total", c),
      results[1],
    );
    assert.ok(
      metricSum(text, "controller_runtime_max_concurrent_reconciles", c) >= 1,
    );
    assert.ok(text.includes(`controller_runtime_active_workers${c} `));
  }
  // the drain asked to be looked at again after its poll interval
  assert.ok(
    metricSum(
      text,
      "controller_runtime_reconcile_total",
      '{controller="eviction",result="requeue_after"}',
    ) > 0,
  );
  assert.equal(
    metricSum(
      text,
      "leader_election_master_status",
      '{name="evictor-monitoring"}',
    ),
    1,
    "the leader's gauge under the Lease's name",
  );
  // the drain requeued itself while its migrations ran: client-go's retries
  assert.ok(
    metricSum(
      text,
      "workqueue_retries_total",
      '{name="eviction",controller="eviction"}',
    ) > 0,
  );
  const requests = (code: string, method: string) =>
    metricSum(
      text,
      "rest_client_requests_total",
      `{code="${code}",method="${method}",host="${apiHost}"}`,
    );
  assert.ok(requests("200", "GET") > 0, "no reads answered");
  // status writes (merge patches or replaces) and Events created
  assert.ok(requests("200", "PATCH") + requests("200", "PUT") > 0);
  assert.ok(requests("201", "POST") > 0, "no creates answered");
  const timed = metricSum(
    text,
    "rest_client_request_duration_seconds_count",
    `{verb="GET",host="${apiHost}"}`,
  );
  assert.ok(timed >= requests("200", "GET"), `${timed} GETs timed`);
  const seconds = metricSum(text, "rest_client_request_duration_seconds_sum");
  const count = metricSum(text, "rest_client_request_duration_seconds_count");
  // within the client's 30 s request timeout, on average
  assert.ok(seconds > 0 && seconds / count < 30, `${seconds} s / ${count}`);
}

/** Every selector of the rules and the panels, with where it is used. */
async function usedSelectors(): Promise<{ where: string; expr: string }[]> {
  const out: { where: string; expr: string }[] = [];
  for (const g of await ruleGroups()) {
    for (const r of g.rules) {
      out.push({ where: `alert ${r.alert}`, expr: r.expr });
    }
  }
  for (const q of await dashboardQueries()) {
    out.push({ where: `panel ${q.panel}`, expr: q.expr });
  }
  return out;
}

/** The feed's metrics exist only with a feed, which needs a broker. */
const noBroker = await rabbitMqMissing();
const FEED_METRICS = "evictor_nova_notifications_";

Deno.test("every metric and label of the rules and the dashboard exists in evictor's /metrics or the API server's; the work queue and API client series say what happened", async () => {
  const e = await env();
  if (noBroker !== undefined) {
    console.error(
      `tests/monitoring_test.ts: ${FEED_METRICS}* not checked: ${noBroker}`,
    );
  }
  const mq = noBroker === undefined ? await sharedRabbitMq() : undefined;
  const sim = await startNovaSim({
    timeScale: 200,
    hosts: [{ name: "mon-a" }, { name: "mon-b", ramMb: 1048576 }],
    servers: [
      { name: "vm-1", host: "mon-a", ramMb: 4096 },
      { name: "vm-2", host: "mon-a", ramMb: 8192 },
    ],
  }, mq === undefined ? {} : { amqpUrl: mq.url });
  const certDir = await makeOwnedTempDir(STAGING_ROOT, "webhook-");
  const pair = await e.servingCert(["127.0.0.1", "localhost"]);
  await Deno.writeTextFile(`${certDir}/tls.crt`, pair.certPem);
  await Deno.writeTextFile(`${certDir}/tls.key`, pair.keyPem);
  const metricsPort = freePort();
  const probePort = freePort();
  const webhookPort = freePort();
  const kubectl = async (args: string[], stdin?: string) => {
    const out = await e.kubectl(args, stdin === undefined ? {} : { stdin });
    assert.equal(out.code, 0, `kubectl ${args.join(" ")}: ${out.stderr}`);
    return out.stdout;
  };
  for (const name of ["mon-a", "mon-b"]) {
    await kubectl(["create", "-f", "-"], manifest(hypervisor(name)));
  }
  const op = await startOperatorProcess({
    kubeconfigPath: e.kubeconfigPath,
    cloudsYaml: sim.cloudsYaml(),
    args: [
      "--poll-interval=200ms",
      "--hypervisor-resync-interval=1s",
      `--metrics-bind-address=127.0.0.1:${metricsPort}`,
      "--insecure-metrics", // a plain scrape; tests/deploy_test.ts covers the secured one
      `--health-probe-bind-address=127.0.0.1:${probePort}`,
      `--webhook-bind-address=127.0.0.1:${webhookPort}`,
      `--webhook-cert-dir=${certDir}`,
      // a real Lease, so that leader_election_master_status names it
      "--leader-elect",
      "--leader-election-namespace=default",
      "--leader-election-id=evictor-monitoring",
      ...(mq === undefined ? [] : [`--nova-notifications-url=${mq.url}`]),
    ],
  });
  let stopped = false;
  try {
    await waitUntil("evictor to be ready", async () => {
      const res = await fetch(`http://127.0.0.1:${probePort}/readyz`);
      await res.body?.cancel();
      return res.ok ? true : undefined;
    }).catch(async (err) => {
      throw new Error(`${err}\n${await operatorLogTail(op)}`);
    });
    // The API server calls evictor's webhook: allowing, then denying.
    const config = await webhookConfigurationYaml(
      `https://127.0.0.1:${webhookPort}`,
      e.caCertPem,
    );
    await kubectl(["apply", "-f", "-"], config);
    await waitUntil("the webhook to admit a policy", async () => {
      const out = await e.kubectl(["apply", "-f", "-"], {
        // A cluster budget, so that evictor_cluster_budget has a sample.
        stdin: manifest(policy({
          maxConcurrentMigrations: 2,
          clusterMaxConcurrentMigrations: 10,
        })),
      });
      return out.code === 0 ? true : undefined;
    });
    const denied = await e.kubectl(["apply", "-f", "-"], {
      // a trait limit above the default: only the webhook knows
      stdin: manifest(policy({
        maxConcurrentMigrations: 2,
        traitLimits: [{ trait: "CUSTOM_MON", maxConcurrentMigrations: 5 }],
      })),
    });
    assert.notEqual(denied.code, 0);
    assert.match(denied.stderr, /denied the request/);
    // A drain, so that the drain's series carry their labels.
    await kubectl(
      ["create", "-f", "-"],
      manifest(eviction("mon-a", { hypervisor: "mon-a", reason: "metrics" })),
    );
    await waitUntil("the drain to succeed", async () => {
      const reason = await kubectl([
        "get",
        "eviction",
        "mon-a",
        "-o",
        'jsonpath={.status.conditions[?(@.type=="Evicting")].reason}',
      ]);
      return reason === "Succeeded" ? true : undefined;
    }, 90_000).catch(async (err) => {
      throw new Error(`${err}\n${await operatorLogTail(op)}`);
    });
    const evictorText = await waitUntil("the feed up", async () => {
      const text = await scrapeMetrics(
        `http://127.0.0.1:${metricsPort}/metrics`,
      );
      return mq === undefined ||
          metricSum(text, `${FEED_METRICS}up`) === 1
        ? text
        : undefined;
    });
    seriesSayWhatHappened(evictorText, new URL(e.server).host);

    // With evictor gone the API server cannot call the webhook, and refuses.
    await op.stop();
    stopped = true;
    const refused = await e.kubectl(["apply", "-f", "-"], {
      stdin: manifest(policy({ maxConcurrentMigrations: 3 })),
    });
    assert.notEqual(refused.code, 0);
    assert.match(refused.stderr, /failed calling webhook/);
    const apiserverText = await kubectl(["get", "--raw", "/metrics"]);

    const scrapes = {
      evictor: {
        families: metricFamilies(evictorText),
        samples: samples(evictorText),
      },
      "the API server": {
        families: metricFamilies(apiserverText),
        samples: samples(apiserverText),
      },
    };
    const problems: string[] = [];
    const used = new Set<string>();
    for (const { where, expr } of await usedSelectors()) {
      for (const name of metricNames(expr)) {
        used.add(name);
        if (mq === undefined && name.startsWith(FEED_METRICS)) continue;
        // apiserver_* come from the API server's own scrape job.
        const source = name.startsWith("apiserver_")
          ? "the API server"
          : "evictor";
        if (!exposes(scrapes[source].families, name)) {
          problems.push(`${name} (${where}) is not in ${source}'s /metrics`);
        }
      }
      for (const sel of selectors(expr)) {
        if (mq === undefined && sel.name.startsWith(FEED_METRICS)) continue;
        const source = sel.name.startsWith("apiserver_")
          ? "the API server"
          : "evictor";
        if (!scrapes[source].samples.some((s) => satisfiesPositive(s, sel))) {
          problems.push(
            `no series of ${source} matches ${sel.name}{${
              sel.matchers.map((m) => `${m.label}${m.op}"${m.value}"`).join()
            }} (${where})`,
          );
        }
      }
    }
    assert.deepEqual(problems, []);
    assert.ok(used.size > 10, [...used].join());
    // Both sources are used: the distinction is not vacuous.
    assert.ok([...used].some((n) => n.startsWith("apiserver_")));
    assert.ok([...used].some((n) => n.startsWith("evictor_")));
  } finally {
    if (!stopped) await op.stop();
    await Deno.remove(op.dir, { recursive: true }).catch(() => {});
    await Deno.remove(certDir, { recursive: true }).catch(() => {});
    await sim.close();
  }
});

interface Obj {
  kind: string;
  metadata: {
    name: string;
    namespace?: string;
    labels?: Record<string, string>;
    annotations?: Record<string, string>;
  };
  data?: Record<string, string>;
  type?: string;
  roleRef?: { name?: string };
  subjects?: unknown[];
  spec?: {
    ports?: { name?: string }[];
    selector?: { matchLabels?: Record<string, string> };
    endpoints?: Record<string, unknown>[];
  };
}

async function kustomize(e: Envtest, dir: string): Promise<Obj[]> {
  const out = await e.kubectl([
    "kustomize",
    new URL(dir, ROOT).pathname,
  ]);
  assert.equal(out.code, 0, out.stderr);
  return out.stdout.split(/^---$/m).map((d) => parseYaml(d) as Obj);
}

Deno.test("kubectl kustomize manifests/monitoring/ builds the rule, a ServiceMonitor on the metrics Service with its scraper's credentials, and the dashboard", async () => {
  const e = await env();
  const objs = await kustomize(e, "manifests/monitoring/");
  assert.deepEqual(objs.map((o) => o.kind).sort(), [
    "ClusterRoleBinding",
    "ConfigMap",
    "PrometheusRule",
    "Secret",
    "ServiceAccount",
    "ServiceMonitor",
  ]);
  for (const o of objs) {
    if (o.kind === "ClusterRoleBinding") continue;
    assert.equal(o.metadata.namespace, "evictor-system", o.kind);
  }
  const cm = objs.find((o) => o.kind === "ConfigMap");
  assert.equal(cm?.metadata.labels?.["grafana_dashboard"], "1");
  assert.equal(
    cm?.data?.["evictor-dashboard.json"],
    await Deno.readTextFile(
      new URL("manifests/monitoring/evictor-dashboard.json", ROOT),
    ),
  );
  // The ServiceMonitor selects evictor's metrics Service as deployed, and
  // scrapes its port over HTTPS (evictor serves /metrics only so) with
  // Prometheus's service-account token, checking the certificate against
  // the CA cert-manager writes beside it for the name it carries.
  const sm = objs.find((o) => o.kind === "ServiceMonitor");
  const endpoint = sm?.spec?.endpoints?.[0];
  assert.equal(endpoint?.["path"], "/metrics");
  assert.equal(endpoint?.["scheme"], "https");
  assert.deepEqual(endpoint?.["tlsConfig"], {
    serverName: "evictor-metrics.evictor-system.svc",
    ca: { secret: { name: "evictor-webhook-tls", key: "ca.crt" } },
  });
  const certificate = (await kustomize(e, "manifests/")).find((o) =>
    o.kind === "Certificate" && o.metadata.name === "evictor-webhook"
  ) as { spec?: { dnsNames?: string[]; secretName?: string } } | undefined;
  assert.equal(certificate?.spec?.secretName, "evictor-webhook-tls");
  assert.ok(
    certificate?.spec?.dnsNames?.includes("evictor-metrics.evictor-system.svc"),
    "the serving certificate names the metrics Service",
  );
  // The token: `authorization` from a ServiceAccount token Secret beside
  // it (not the deprecated bearerTokenFile, Prometheus's own token), of an
  // account bound to evictor-metrics-reader only (tests/deploy_test.ts
  // scrapes a running evictor with it).
  assert.equal(endpoint?.["bearerTokenFile"], undefined);
  const authorization = endpoint?.["authorization"] as {
    type?: string;
    credentials?: { name?: string; key?: string };
  } | undefined;
  assert.equal(authorization?.type, "Bearer");
  assert.equal(authorization?.credentials?.key, "token");
  const secret = objs.find((o) =>
    o.kind === "Secret" && o.metadata.name === authorization?.credentials?.name
  );
  assert.equal(secret?.type, "kubernetes.io/service-account-token");
  const account = secret?.metadata.annotations?.[
    "kubernetes.io/service-account.name"
  ];
  assert.ok(
    objs.some((o) =>
      o.kind === "ServiceAccount" && o.metadata.name === account
    ),
    `no ServiceAccount ${account}`,
  );
  const bindings = objs.filter((o) => o.kind === "ClusterRoleBinding");
  assert.deepEqual(
    bindings.map((b) => [b.roleRef?.name, b.subjects]),
    [["evictor-metrics-reader", [{
      kind: "ServiceAccount",
      name: account,
      namespace: "evictor-system",
    }]]],
  );
  const reader = (await kustomize(e, "manifests/")).find((o) =>
    o.kind === "ClusterRole" && o.metadata.name === "evictor-metrics-reader"
  ) as { rules?: unknown[] } | undefined;
  assert.deepEqual(reader?.rules, [{
    nonResourceURLs: ["/metrics"],
    verbs: ["get"],
  }]);
  const selector = Object.entries(sm?.spec?.selector?.matchLabels ?? {});
  assert.ok(selector.length > 0);
  const services = (await kustomize(e, "manifests/")).filter((o) =>
    o.kind === "Service" &&
    selector.every(([k, v]) => o.metadata.labels?.[k] === v) &&
    (o.spec?.ports ?? []).some((p) => p.name === endpoint?.["port"])
  );
  assert.deepEqual(services.map((o) => o.metadata.name), ["evictor-metrics"]);
});

Deno.test("manifests/monitoring/ passes the Prometheus operator's own CRDs with strict validation, and a misspelt field does not", async () => {
  const e = await env();
  const crds = await prometheusOperatorCrds();
  await applyCrdFiles(e, [
    `${crds}/monitoring.coreos.com_servicemonitors.yaml`,
    `${crds}/monitoring.coreos.com_prometheusrules.yaml`,
    new URL("manifests/namespace.yaml", ROOT).pathname,
  ], [
    "servicemonitors.monitoring.coreos.com",
    "prometheusrules.monitoring.coreos.com",
  ]);
  const objs = await kustomize(e, "manifests/monitoring/");
  const dryRun = (list: Obj[]) =>
    e.kubectl([
      "apply",
      "--server-side",
      "--dry-run=server",
      "--validate=strict",
      "-f",
      "-",
    ], {
      stdin: JSON.stringify({ apiVersion: "v1", kind: "List", items: list }),
    });
  const applied = await dryRun(objs);
  assert.equal(applied.code, 0, applied.stderr);
  assert.equal(
    applied.stdout.trim().split("\n").length,
    objs.length,
    applied.stdout,
  );
  // The schema is really checked: `authorization` misspelt is refused.
  const misspelt = objs.map((o) => {
    if (o.kind !== "ServiceMonitor") return o;
    const copy = structuredClone(o);
    const endpoint = copy.spec?.endpoints?.[0] ?? {};
    endpoint["authorisation"] = endpoint["authorization"];
    delete endpoint["authorization"];
    return copy;
  });
  const refused = await dryRun(misspelt);
  assert.notEqual(refused.code, 0);
  assert.match(refused.stderr, /unknown field.*authorisation/);
});

Deno.test({
  name: "stop the dedicated API server",
  sanitizeOps: false,
  sanitizeResources: false,
  fn: async () => {
    if (envPromise) await (await envPromise).stop();
  },
});
