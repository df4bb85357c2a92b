/**
 * charts/evictor/ against manifests/, with the real Helm (hack/helm/) and
 * the real kubectl: on a cluster with cert-manager and the Prometheus
 * operator, default values make `helm template` render exactly the objects
 * of `kubectl kustomize manifests/` and `manifests/monitoring/` (Helm's own
 * labels and the release in the selectors aside); without them nothing of
 * their APIs renders and the chart makes the webhook's certificate; the
 * image is the chart's appVersion; two releases share nothing but the CRDs;
 * the renderings apply server-side to a real API server,
 * `helm install` refuses to run without the credentials Secret,
 * `helm install`/`upgrade`/`uninstall` keep the credentials Secret and
 * keep the EvictionPolicy (an object of the release) updated in place, non-default values change what
 * they should and nothing else, and bad values are refused with a message
 * naming them. On a bare API server: helm_bare_cluster_test.ts.
 */
import assert from "node:assert/strict";
import { createPrivateKey, X509Certificate } from "node:crypto";
import { parse } from "yaml";
import { staleChartCopies } from "../hack/sync_chart.ts";
import {
  CHART,
  dryRunApply,
  type K8sObject,
  keyOf,
  NAMESPACE,
  objectsOf,
  only,
  renderChart as render,
  selectorsOf,
  templateChart,
} from "./harness/chart.ts";
import {
  type Envtest,
  envtestBinDir,
  startEnvtest,
} from "./harness/envtest.ts";
import { helm } from "./harness/helm.ts";

const ROOT = new URL("../", import.meta.url);
const CUSTOM_VALUES = "tests/testdata/helm/custom_values.yaml";
/** What `helm template` is told a cluster with both optional APIs serves. */
const CERT_MANAGER_API = ["--api-versions", "cert-manager.io/v1"];
const MONITORING_API = ["--api-versions", "monitoring.coreos.com/v1"];
const BOTH_APIS = [...CERT_MANAGER_API, ...MONITORING_API];
/** The kinds whose rendering depends on the cluster's APIs and values. */
const OPTIONAL_KINDS = [
  "Certificate",
  "Issuer",
  "PrometheusRule",
  "Secret",
  "ServiceMonitor",
];

const chartYaml = parse(
  await Deno.readTextFile(new URL(`${CHART}/Chart.yaml`, ROOT)),
) as { version: string; appVersion: string };

/** Helm's labels on every templated object, and their values for `release`. */
function helmLabels(release: string): Record<string, string> {
  return {
    "app.kubernetes.io/instance": release,
    "app.kubernetes.io/managed-by": "Helm",
    "app.kubernetes.io/version": chartYaml.appVersion,
    "helm.sh/chart": `evictor-${chartYaml.version}`,
  };
}

/** Objects keyed and in key order, so that a difference shows as one object. */
function byKey(objects: K8sObject[]): Map<string, K8sObject> {
  const sorted = [...objects].sort((a, b) => keyOf(a).localeCompare(keyOf(b)));
  const map = new Map<string, K8sObject>();
  for (const o of sorted) {
    assert.ok(!map.has(keyOf(o)), `rendered twice: ${keyOf(o)}`);
    map.set(keyOf(o), o);
  }
  return map;
}

/**
 * Checks that every object but the CRDs (Helm installs `crds/` untemplated)
 * carries Helm's four labels with the release's values, then removes
 * exactly those: whatever else differs from kustomize stays visible.
 */
function withoutHelmLabels(objects: K8sObject[], release: string) {
  const expected = helmLabels(release);
  return objects.map((o) => {
    if (o.kind === "CustomResourceDefinition") return o;
    const labels = { ...o.metadata.labels };
    for (const [name, value] of Object.entries(expected)) {
      assert.equal(labels[name], value, `${keyOf(o)}: label ${name}`);
      delete labels[name];
    }
    return { ...o, metadata: { ...o.metadata, labels } };
  });
}

/**
 * Checks that every selector, and the pod template's labels, carry the
 * release (`app.kubernetes.io/instance`), then removes exactly that label
 * there: manifests/ installs one instance and its selectors cannot change
 * (a Deployment's selector is immutable).
 */
function withoutReleaseInSelectors(objects: K8sObject[], release: string) {
  const copies = structuredClone(objects);
  for (const o of copies) {
    const labelSets: [string, Record<string, string>][] = selectorsOf(o).map((
      s,
    ) => [s.where, s.matchLabels]);
    if (o.kind === "Deployment") {
      labelSets.push([
        `${keyOf(o)} pod labels`,
        o.spec.template.metadata.labels,
      ]);
    }
    for (const [where, labels] of labelSets) {
      assert.equal(labels["app.kubernetes.io/instance"], release, where);
      delete labels["app.kubernetes.io/instance"];
    }
  }
  return copies;
}

/** The kinds of `objects` that are among {@linkcode OPTIONAL_KINDS}, once each. */
function optionalKinds(objects: K8sObject[]): string[] {
  const kinds = objects.map((o) => o.kind).filter((k) =>
    OPTIONAL_KINDS.includes(k)
  );
  return [...new Set(kinds)].sort();
}

async function kustomize(dir: string): Promise<K8sObject[]> {
  const kubectl = `${await envtestBinDir()}/kubectl`;
  const out = await new Deno.Command(kubectl, {
    args: ["kustomize", new URL(dir, ROOT).pathname],
    stdin: "null",
    stdout: "piped",
    stderr: "piped",
  }).output();
  const text = new TextDecoder();
  assert.ok(
    out.success,
    `kubectl kustomize ${dir}: ${text.decode(out.stderr)}`,
  );
  return objectsOf(text.decode(out.stdout), `kubectl kustomize ${dir}`);
}

Deno.test("the chart's CRDs, alert rules and dashboard are the files of manifests/", async () => {
  assert.deepEqual(await staleChartCopies(), [], "run `deno task gen:chart`");
});

Deno.test("Chart.yaml's appVersion is evictor's version (deno.json)", async () => {
  const deno = JSON.parse(
    await Deno.readTextFile(new URL("deno.json", ROOT)),
  ) as { version: string };
  assert.equal(chartYaml.appVersion, deno.version);
});

Deno.test("helm lint --strict passes with the default and the test's values", async () => {
  for (const args of [[], ["--values", CUSTOM_VALUES]]) {
    const out = await helm(["lint", "--strict", CHART, ...args]);
    assert.equal(out.code, 0, `${args.join(" ")}: ${out.stdout}${out.stderr}`);
    assert.match(out.stdout, /1 chart\(s\) linted, 0 chart\(s\) failed/);
  }
});

Deno.test("with cert-manager and the Prometheus operator, default values render the objects of kubectl kustomize manifests/ and manifests/monitoring/", async () => {
  // The image aside: the kustomization's is a placeholder to set.
  const kustomization = parse(
    await Deno.readTextFile(new URL("manifests/kustomization.yaml", ROOT)),
  ) as { images: { newTag: string }[] };
  const tag = `image.tag=${kustomization.images[0]?.newTag}`;
  const [rendered, main, monitoring] = await Promise.all([
    render([...BOTH_APIS, "--set", tag]),
    kustomize("manifests"),
    kustomize("manifests/monitoring"),
  ]);
  // The release's namespace is made before `helm install` stores the
  // release in it, so the chart renders it only when told (below).
  const expected = [...main, ...monitoring].filter((o) =>
    o.kind !== "Namespace"
  );
  assert.deepEqual(
    byKey(withoutReleaseInSelectors(
      withoutHelmLabels(rendered, "evictor"),
      "evictor",
    )),
    byKey(expected),
  );

  const withNamespace = await render(["--set", "namespace.create=true"]);
  assert.deepEqual(
    withoutHelmLabels([only(withNamespace, "Namespace")], "evictor"),
    [only(main, "Namespace")],
  );
});

Deno.test("the test's values change what they should in the default rendering and nothing else", async () => {
  // cert-manager's certificate: the chart's own would differ in each rendering
  const [defaults, custom, sample] = await Promise.all([
    render(CERT_MANAGER_API),
    render([...CERT_MANAGER_API, "--values", CUSTOM_VALUES]),
    Deno.readTextFile(new URL("manifests/samples/eviction_policy.yaml", ROOT)),
  ]);
  // Off with the ServiceMonitor: its scraper account, token and binding.
  const expected = structuredClone(defaults).filter((o) =>
    o.kind !== "ServiceMonitor" && o.kind !== "PrometheusRule" &&
    !o.metadata.name.startsWith("evictor-metrics-scraper")
  );
  const deployment = only(expected, "Deployment").spec;
  deployment.replicas = 3;
  const pod = deployment.template.spec;
  pod.nodeSelector = { "node-role.kubernetes.io/control-plane": "" };
  pod.tolerations = [{
    key: "node-role.kubernetes.io/control-plane",
    operator: "Exists",
    effect: "NoSchedule",
  }];
  const manager = pod.containers[0];
  manager.image = "registry.example.com/cloud/evictor:0.1.0";
  manager.args = [
    ...manager.args.map((a: string) =>
      a === "--os-cloud=evictor" ? "--os-cloud=region-two" : a
    ),
    "--log-level=debug",
    "--discover-hypervisors",
  ];
  manager.resources = {
    requests: { cpu: "100m", memory: "256Mi" },
    limits: { memory: "1Gi" },
  };
  const openstack = pod.volumes.find((v: { name: string }) =>
    v.name === "openstack"
  );
  openstack.secret.secretName = "openstack-region-two";
  // Nova's notification URL comes from the same Secret.
  const notificationsUrl = manager.env.find((e: { name: string }) =>
    e.name === "EVICTOR_NOVA_NOTIFICATIONS_URL"
  );
  notificationsUrl.valueFrom.secretKeyRef.name = "openstack-region-two";
  // The policy: the sample's, an object of the release (no hook), kept by
  // helm uninstall, marked as checked by this release's chart.
  const policy = parse(sample) as K8sObject;
  policy.metadata.labels = {
    "app.kubernetes.io/name": "evictor",
    "app.kubernetes.io/part-of": "evictor",
    ...helmLabels("evictor"),
  };
  policy.metadata.annotations = {
    "helm.sh/resource-policy": "keep",
    "evictor.kvm.cloud.sap/checked-by-chart": `${NAMESPACE}/evictor`,
  };
  expected.push(policy);
  // ...whose first creation the policy webhook skips (nothing serves it yet)
  const config = only(expected, "ValidatingWebhookConfiguration");
  const [policyHook] = config["webhooks"] as Record<string, unknown>[];
  assert.ok(policyHook !== undefined);
  policyHook["matchConditions"] = [{
    name: "not-the-releases-first-policy",
    expression: "!(request.operation == 'CREATE' && " +
      "has(object.metadata.annotations) && " +
      "object.metadata.annotations[?'evictor.kvm.cloud.sap/checked-by-chart'].orValue('') == " +
      `'${NAMESPACE}/evictor')`,
  }];
  assert.deepEqual(byKey(custom), byKey(expected));
});

/** The caBundle of each of the configuration's webhooks. */
function caBundles(objects: K8sObject[]): (string | undefined)[] {
  const config = only(objects, "ValidatingWebhookConfiguration");
  const webhooks = config["webhooks"] as {
    clientConfig: { caBundle?: string };
  }[];
  assert.equal(webhooks.length, 2);
  return webhooks.map((w) => w.clientConfig.caBundle);
}

/** The Secret the Deployment mounts for the webhook's certificate. */
function mountedCertSecret(objects: K8sObject[]): string {
  const volumes = only(objects, "Deployment").spec.template.spec.volumes;
  const certs = volumes.find((v: { name: string }) =>
    v.name === "webhook-certs"
  );
  return certs.secret.secretName;
}

Deno.test("with webhook.certSecretName the webhook uses that Secret and CA bundle, cert-manager or not", async () => {
  const caBundle = btoa("-----BEGIN CERTIFICATE-----\n...");
  const own = [
    "--set",
    "webhook.certSecretName=my-webhook-tls",
    "--set",
    `webhook.caBundle=${caBundle}`,
  ];
  for (
    const args of [
      ["--set", "certManager.enabled=false", ...own],
      [...CERT_MANAGER_API, ...own],
      own,
    ]
  ) {
    const objects = await render(args);
    assert.deepEqual(optionalKinds(objects), [], args.join(" "));
    const config = only(objects, "ValidatingWebhookConfiguration");
    assert.equal(config.metadata.annotations, undefined);
    assert.deepEqual(caBundles(objects), [caBundle, caBundle]);
    assert.equal(mountedCertSecret(objects), "my-webhook-tls");
  }
});

Deno.test("without cert-manager the chart makes a CA and the webhook's serving certificate for both Services", async () => {
  const objects = await render();
  const secret = only(objects, "Secret", "evictor-webhook-tls");
  assert.equal(secret["type"], "kubernetes.io/tls");
  const data = secret["data"] as Record<string, string>;
  const pem = (key: string) => atob(data[key] ?? "");
  const ca = new X509Certificate(pem("ca.crt"));
  const serving = new X509Certificate(pem("tls.crt"));
  assert.ok(ca.ca, "ca.crt is a CA");
  assert.ok(!serving.ca, "tls.crt is not a CA");
  assert.ok(serving.verify(ca.publicKey), "the CA signed tls.crt");
  assert.ok(serving.checkIssued(ca), "tls.crt names the CA as its issuer");
  assert.ok(serving.checkPrivateKey(createPrivateKey(pem("tls.key"))));
  assert.equal(
    serving.subjectAltName,
    [
      `evictor-webhook.${NAMESPACE}.svc`,
      `evictor-webhook.${NAMESPACE}.svc.cluster.local`,
      `evictor-metrics.${NAMESPACE}.svc`,
      `evictor-metrics.${NAMESPACE}.svc.cluster.local`,
    ].map((name) => `DNS:${name}`).join(", "),
  );
  const DAY_MS = 24 * 60 * 60 * 1000;
  for (const c of [ca, serving]) {
    const days = (Date.parse(c.validTo) - Date.parse(c.validFrom)) / DAY_MS;
    assert.equal(Math.round(days), 3650, `${c.subject}: 10 years`);
  }
  // The API server trusts exactly that CA; nothing waits for cert-manager.
  const config = only(objects, "ValidatingWebhookConfiguration");
  assert.equal(config.metadata.annotations, undefined);
  assert.deepEqual(caBundles(objects), [data["ca.crt"], data["ca.crt"]]);
  assert.equal(mountedCertSecret(objects), "evictor-webhook-tls");
});

Deno.test("objects of cert-manager and the Prometheus operator render when the cluster serves their API or a value asks", async () => {
  const table: [string[], string[]][] = [
    [[], ["Secret"]],
    [MONITORING_API, ["PrometheusRule", "Secret", "ServiceMonitor"]],
    [CERT_MANAGER_API, ["Certificate", "Issuer"]],
    // the ServiceMonitor's scraper token is a Secret too
    [BOTH_APIS, [
      "Certificate",
      "Issuer",
      "PrometheusRule",
      "Secret",
      "ServiceMonitor",
    ]],
    [["--set", "certManager.enabled=true"], ["Certificate", "Issuer"]],
    [[...CERT_MANAGER_API, "--set", "certManager.enabled=false"], ["Secret"]],
    [
      ["--set", "monitoring.serviceMonitor.enabled=true"],
      ["Secret", "ServiceMonitor"],
    ],
    [
      [...MONITORING_API, "--set", "monitoring.prometheusRule.enabled=false"],
      ["Secret", "ServiceMonitor"],
    ],
    [
      [...MONITORING_API, "--set", "monitoring.serviceMonitor.enabled=false"],
      ["PrometheusRule", "Secret"],
    ],
  ];
  for (const [args, kinds] of table) {
    assert.deepEqual(optionalKinds(await render(args)), kinds, args.join(" "));
  }
});

Deno.test("the image is the chart's appVersion unless a tag or a digest is given", async () => {
  const digest = `sha256:${"ab".repeat(32)}`;
  const table: [string[], string][] = [
    [[], `evictor:${chartYaml.appVersion}`],
    [["--set", "image.tag=0.2.0-rc.1"], "evictor:0.2.0-rc.1"],
    [
      ["--set", "image.repository=r.example/e"],
      `r.example/e:${chartYaml.appVersion}`,
    ],
    [["--set", `image.digest=${digest}`], `evictor@${digest}`],
  ];
  for (const [args, image] of table) {
    const pod = only(await render(args), "Deployment").spec.template.spec;
    assert.equal(pod.containers[0].image, image, args.join(" "));
  }
});

Deno.test("two releases in one namespace share only the CRDs, and neither's selectors pick the other's pods or Services", async () => {
  const [green, blue] = await Promise.all([
    render(BOTH_APIS, "evictor"),
    render(BOTH_APIS, "blue"),
  ]);
  const templated = (objects: K8sObject[]) =>
    objects.filter((o) => o.kind !== "CustomResourceDefinition");
  const greenKeys = new Set(templated(green).map(keyOf));
  assert.deepEqual(
    templated(blue).map(keyOf).filter((k) => greenKeys.has(k)),
    [],
  );
  const matches = (selector: Record<string, string>, o: K8sObject) => {
    const labels = o.kind === "Deployment"
      ? o.spec.template.metadata.labels
      : o.metadata.labels ?? {};
    return Object.entries(selector).every(([k, v]) => labels[k] === v);
  };
  for (
    const [mine, theirs, release] of [
      [green, blue, "evictor"],
      [blue, green, "blue"],
    ] as const
  ) {
    const selectors = mine.flatMap(selectorsOf);
    assert.equal(
      selectors.length,
      6,
      "Deployment (2), Services, PDB, ServiceMonitor",
    );
    const own = (s: (typeof selectors)[number]) =>
      s.selects === "Pod" ? only(mine, "Deployment") : only(
        mine,
        "Service",
        `${release === "blue" ? "blue-evictor" : "evictor"}-metrics`,
      );
    for (const s of selectors) {
      assert.ok(matches(s.matchLabels, own(s)), `${s.where}: its own`);
      const targets = s.selects === "Pod"
        ? [only(theirs, "Deployment")]
        : theirs.filter((o) => o.kind === "Service");
      for (const t of targets) {
        assert.ok(!matches(s.matchLabels, t), `${s.where} picks ${keyOf(t)}`);
      }
    }
  }
});

Deno.test("a release of another name names every object after it, its Lease included", async () => {
  const [objects, withApis] = await Promise.all([
    render([], "blue"),
    render(BOTH_APIS, "blue"),
  ]);
  for (const o of [...objects, ...withApis]) {
    if (o.kind === "CustomResourceDefinition") continue;
    assert.match(o.metadata.name, /^blue-evictor(-|$)/, keyOf(o));
  }
  const args: string[] =
    only(objects, "Deployment").spec.template.spec.containers[0].args;
  assert.ok(args.includes("--leader-election-id=blue-evictor"), `${args}`);
  const role = only(objects, "Role", "blue-evictor-leader-election");
  const rules = role["rules"] as { resourceNames?: string[] }[];
  assert.deepEqual(rules.flatMap((r) => r.resourceNames ?? []), [
    "blue-evictor",
  ]);
  assert.equal(mountedCertSecret(objects), "blue-evictor-webhook-tls");
  assert.equal(
    new X509Certificate(
      atob(
        (only(objects, "Secret", "blue-evictor-webhook-tls")["data"] as {
          "tls.crt": string;
        })["tls.crt"],
      ),
    ).subjectAltName?.split(", ")[0],
    `DNS:blue-evictor-webhook.${NAMESPACE}.svc`,
  );
  const dnsNames = only(withApis, "Certificate", "blue-evictor-webhook").spec
    .dnsNames;
  assert.deepEqual(dnsNames, [
    `blue-evictor-webhook.${NAMESPACE}.svc`,
    `blue-evictor-webhook.${NAMESPACE}.svc.cluster.local`,
    `blue-evictor-metrics.${NAMESPACE}.svc`,
    `blue-evictor-metrics.${NAMESPACE}.svc.cluster.local`,
  ]);
  const endpoint = only(withApis, "ServiceMonitor", "blue-evictor").spec
    .endpoints[0];
  assert.equal(
    endpoint.tlsConfig.serverName,
    `blue-evictor-metrics.${NAMESPACE}.svc`,
  );
  assert.equal(endpoint.tlsConfig.ca.secret.name, "blue-evictor-webhook-tls");
});

Deno.test("one replica renders no PodDisruptionBudget (it would block every node drain); two do", async () => {
  const one = await render(["--set", "replicas=1"]);
  assert.deepEqual(one.filter((o) => o.kind === "PodDisruptionBudget"), []);
  assert.equal(only(one, "Deployment").spec.replicas, 1);
  const two = await render([]);
  assert.equal(
    only(two, "PodDisruptionBudget").spec.minAvailable,
    1,
  );
});

Deno.test("every namespaced object is in the release's namespace, but the Events Role and RoleBinding values.yaml gives the reason for", async () => {
  for (const args of [BOTH_APIS, ["--values", CUSTOM_VALUES]]) {
    const objects = await render(["--namespace", "team-a", ...args]);
    const outside = objects.filter((o) =>
      o.metadata.namespace !== undefined && o.metadata.namespace !== "team-a"
    ).map(keyOf).sort();
    assert.deepEqual(outside, [
      "Role default/evictor-events",
      "RoleBinding default/evictor-events",
    ]);
  }
  const values = await Deno.readTextFile(
    new URL(`${CHART}/values.yaml`, ROOT),
  );
  assert.match(values, /eventsInDefaultNamespace: true/);
  assert.match(values, /Events about cluster-scoped objects only in `default`/);
  // without it, nothing outside the release's namespace
  const none = await render([
    "--namespace",
    "team-a",
    "--set",
    "rbac.eventsInDefaultNamespace=false",
  ]);
  assert.deepEqual(
    none.filter((o) =>
      o.metadata.namespace !== undefined && o.metadata.namespace !== "team-a"
    ).map(keyOf),
    [],
  );
});

Deno.test("the pods' grace period exceeds --shutdown-timeout", async () => {
  const pod = (objects: K8sObject[]) =>
    only(objects, "Deployment").spec.template.spec;
  const defaults = pod(await render([]));
  // the binary's default, 25 s: no flag, as in manifests/
  assert.ok(
    !defaults.containers[0].args.some((a: string) =>
      a.startsWith("--shutdown-timeout")
    ),
  );
  assert.equal(defaults.terminationGracePeriodSeconds, 30);
  const config = await Deno.readTextFile(new URL("app/config.ts", ROOT));
  assert.match(config, /"shutdown-timeout": \{[^}]*default: "25s"/);
  const longer = pod(await render(["--set", "shutdownTimeoutSeconds=50"]));
  assert.ok(longer.containers[0].args.includes("--shutdown-timeout=50s"));
  assert.equal(longer.terminationGracePeriodSeconds, 55);
});

Deno.test("bad values are refused with a message naming the value and what is expected", async () => {
  const table: [string[], RegExp][] = [
    [
      [
        "--set",
        "policy.create=true",
        "--set",
        "policy.spec.maxConcurrentMigrations=2",
        "--set",
        "policy.spec.traitLimits[0].trait=CUSTOM_A",
        "--set",
        "policy.spec.traitLimits[0].maxConcurrentMigrations=3",
      ],
      /policy\.spec\.traitLimits\[0\]\.maxConcurrentMigrations: got 3 for trait CUSTOM_A; expected at most spec\.maxConcurrentMigrations 2/,
    ],
    [
      [
        "--set",
        "policy.create=true",
        "--set",
        "policy.spec.maxConcurrentMigrations=2",
        "--set",
        "policy.spec.traitLimits[0].trait=CUSTOM_A",
        "--set",
        "policy.spec.traitLimits[0].maxConcurrentMigrations=1",
        "--set",
        "policy.spec.traitLimits[1].trait=CUSTOM_A",
        "--set",
        "policy.spec.traitLimits[1].maxConcurrentMigrations=1",
      ],
      /policy\.spec\.traitLimits\[1\]\.trait: got "CUSTOM_A", already listed at traitLimits\[0\]/,
    ],
    [
      ["--set", "policy.spec.maxConcurrentMigrations=65"],
      /at '\/policy\/spec\/maxConcurrentMigrations'.*maximum/,
    ],
    [
      ["--set", "policy.spec.traitLimits[0].trait=custom_lower"],
      /at '\/policy\/spec\/traitLimits\/0.*/,
    ],
    [
      ["--set", "shutdownTimeoutSeconds=0"],
      /at '\/shutdownTimeoutSeconds'.*minimum/,
    ],
    [["--set", "replicas=two"], /at '\/replicas': got string, want integer/],
    [["--set", "replica=3"], /additional properties 'replica' not allowed/],
    [["--set", "logLevel=verbose"], /at '\/logLevel'.*value must be one of/],
    [
      ["--set", "leaderElection.enabled=false"],
      /replicas=2 needs leaderElection\.enabled=true/,
    ],
    [
      ["--set", "certManager.enabled=yes"],
      /at '\/certManager\/enabled'.*value must be one of/,
    ],
    [
      ["--set", "monitoring.serviceMonitor.enabled=on"],
      /at '\/monitoring\/serviceMonitor\/enabled'.*value must be one of/,
    ],
    [
      [
        "--set",
        "certManager.enabled=false",
        "--set",
        "webhook.certSecretName=x",
      ],
      /webhook\.caBundle: with webhook\.certSecretName=x, give the base64 PEM/,
    ],
    [
      ["--set", "webhook.caBundle=Zm9v"],
      /webhook\.caBundle: only with webhook\.certSecretName/,
    ],
    [
      [
        "--set",
        "certManager.enabled=true",
        "--set",
        "webhook.certSecretName=x",
        "--set",
        "webhook.caBundle=Zm9v",
      ],
      /webhook\.certSecretName=x: with certManager\.enabled=true cert-manager writes/,
    ],
    [
      ["--set", "health.port=8443"],
      /metrics\.port=8443, health\.port=8443 and webhook\.port=9443 must differ/,
    ],
    [
      ["--set", "health.prot=8081"],
      /additional properties 'prot' not allowed/,
    ],
    [
      ["--set", "image.digest=latest"],
      /at '\/image\/digest'.*does not match pattern/,
    ],
  ];
  for (const [args, message] of table) {
    const out = await helm(["template", "evictor", CHART, ...args]);
    assert.notEqual(out.code, 0, `${args.join(" ")} was accepted`);
    assert.match(out.stderr, message, args.join(" "));
  }
});

/**
 * Readies a dedicated API server for the dry runs: the stand-in CRDs of
 * cert-manager and the Prometheus operator, and the release's namespace.
 */
async function prepare(e: Envtest): Promise<void> {
  for (
    const file of [
      "tests/testdata/cert_manager_crds.yaml",
      "tests/testdata/prometheus_operator_crds.yaml",
      "manifests/namespace.yaml",
    ]
  ) {
    const out = await e.kubectl(["apply", "-f", new URL(file, ROOT).pathname]);
    assert.equal(out.code, 0, `${file}: ${out.stderr}`);
  }
  const waited = await e.kubectl([
    "wait",
    "--for=condition=Established",
    "crd/issuers.cert-manager.io",
    "crd/certificates.cert-manager.io",
    "crd/servicemonitors.monitoring.coreos.com",
    "crd/prometheusrules.monitoring.coreos.com",
  ]);
  assert.equal(waited.code, 0, waited.stderr);
}

/** Renders with `args` and applies the result with `--dry-run=server`. */
async function dryRun(e: Envtest, args: string[]): Promise<void> {
  const { text, objects } = await templateChart(args);
  await dryRunApply(e, text, objects.length, args.join(" "));
}

/** kubectl that must succeed; its output. */
async function kubectlOk(e: Envtest, args: string[]): Promise<string> {
  const out = await e.kubectl(args);
  assert.equal(out.code, 0, `kubectl ${args.join(" ")}: ${out.stderr}`);
  return out.stdout;
}

async function uidOf(e: Envtest, args: string[]): Promise<string> {
  return await kubectlOk(e, [...args, "-o", "jsonpath={.metadata.uid}"]);
}

Deno.test("the chart applies server-side and installs, upgrades and uninstalls with the real Helm", async (t) => {
  // Its own API server: Helm installs the CRDs from the chart's crds/, and
  // the stand-in CRDs are not for the shared one. The API server calls no
  // admission webhooks here: nothing serves the chart's (no kubelet runs
  // its pods), and the webhook would refuse the policy that the Helm hook
  // writes; the webhook's own tests are webhook_apiserver_test.ts.
  const e = await startEnvtest({
    installCrds: false,
    apiServerFlags: ["--disable-admission-plugins=ValidatingAdmissionWebhook"],
  });
  const kubeconfig = ["--kubeconfig", e.kubeconfigPath, "-n", NAMESPACE];
  try {
    await prepare(e);
    await t.step("default values: a server-side dry run", async () => {
      // helm template knows only what it is told; helm install asks the
      // cluster (below).
      await dryRun(e, BOTH_APIS);
    });

    await t.step(
      "helm install, upgrade and uninstall leave the credentials and the policy",
      async () => {
        // Without the credentials Secret the pods could never start: the
        // install fails at once, naming it, instead of waiting.
        const early = Date.now();
        const refused = await helm([
          "install",
          "evictor",
          CHART,
          ...kubeconfig,
          "--values",
          CUSTOM_VALUES,
          "--wait",
          "--timeout",
          "10m",
        ]);
        assert.notEqual(refused.code, 0, "installed without the Secret");
        assert.match(
          refused.stderr,
          new RegExp(
            `openstack\\.secretName: the Secret ${NAMESPACE}/openstack-region-two with the OpenStack credentials \\(key clouds\\.yaml\\) does not exist`,
          ),
        );
        // it never waited for --wait's timeout
        assert.ok(Date.now() - early < 5 * 60_000);
        await kubectlOk(e, [
          "-n",
          NAMESPACE,
          "create",
          "secret",
          "generic",
          "openstack-region-two",
          "--from-literal=clouds.yaml=clouds: {}",
        ]);
        const secret = [
          "-n",
          NAMESPACE,
          "get",
          "secret",
          "openstack-region-two",
        ];
        const secretUid = await uidOf(e, secret);
        const custom = ["--values", CUSTOM_VALUES];

        const installed = await helm([
          "install",
          "evictor",
          CHART,
          ...kubeconfig,
          ...custom,
        ]);
        assert.equal(installed.code, 0, installed.stderr);
        assert.equal(
          await kubectlOk(e, [
            "-n",
            NAMESPACE,
            "get",
            "deployment",
            "evictor",
            "-o",
            "jsonpath={.spec.replicas}",
          ]),
          "3",
        );
        const policy = ["get", "evictionpolicy", "default"];
        const policyUid = await uidOf(e, policy);
        // an object of the release, not a hook
        const manifest = await helm([
          "get",
          "manifest",
          "evictor",
          ...kubeconfig,
        ]);
        assert.equal(manifest.code, 0, manifest.stderr);
        assert.deepEqual(
          objectsOf(manifest.stdout, "helm get manifest").filter((o) =>
            o.kind === "EvictionPolicy"
          ).map((o) => o.metadata.name),
          ["default"],
        );
        const spec = async () =>
          JSON.parse(await kubectlOk(e, [...policy, "-o", "json"])).spec;
        const values = parse(await Deno.readTextFile(CUSTOM_VALUES)) as {
          policy: { spec: Record<string, unknown> };
        };
        // abortStuckMigrations: the CRD's default
        const installedSpec = {
          abortStuckMigrations: false,
          ...values.policy.spec,
        };
        assert.deepEqual(await spec(), installedSpec);

        const upgraded = await helm([
          "upgrade",
          "evictor",
          CHART,
          ...kubeconfig,
          ...custom,
          "--set",
          "policy.spec.maxConcurrentMigrations=8",
        ]);
        assert.equal(upgraded.code, 0, upgraded.stderr);
        assert.deepEqual(await spec(), {
          ...installedSpec,
          maxConcurrentMigrations: 8,
        });
        assert.equal(await uidOf(e, policy), policyUid, "updated in place");

        const uninstalled = await helm(["uninstall", "evictor", ...kubeconfig]);
        assert.equal(uninstalled.code, 0, uninstalled.stderr);
        const gone = await e.kubectl([
          "-n",
          NAMESPACE,
          "get",
          "deployment",
          "evictor",
        ]);
        assert.match(gone.stderr, /NotFound/);
        assert.equal(await uidOf(e, policy), policyUid, "the policy stays");
        assert.equal(await uidOf(e, secret), secretUid, "the Secret stays");
        await uidOf(e, ["get", "crd", "evictions.kvm.cloud.sap"]);
        // The other renderings' dry runs would set the policy's fields, which
        // Helm owns now.
        await kubectlOk(e, ["delete", ...policy.slice(1)]);
      },
    );

    await t.step(
      "the test's values and no cert-manager: server-side dry runs",
      async () => {
        await dryRun(e, ["--values", CUSTOM_VALUES]);
        await dryRun(e, [
          "--set",
          "certManager.enabled=false",
          "--set",
          "webhook.certSecretName=my-webhook-tls",
          "--set",
          `webhook.caBundle=${btoa("not checked by the API server")}`,
          "--set",
          "metrics.readerServiceAccounts[0].name=prometheus-k8s",
          "--set",
          "metrics.readerServiceAccounts[0].namespace=monitoring",
        ]);
      },
    );
  } finally {
    await e.stop();
  }
});
