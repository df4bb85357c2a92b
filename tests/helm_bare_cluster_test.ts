/**
 * charts/evictor/ on a bare cluster, with the real Helm and a real API
 * server that has neither cert-manager's nor the Prometheus operator's
 * CRDs: default values apply server-side (one release, and two in one
 * namespace), two releases install side by side with `helm install` and
 * each one's selectors pick only its own pods and Services, and the
 * certificate the chart makes for the webhook is kept by upgrades and,
 * deleted, replaced by one whose CA is trusted beside the old one until the
 * next upgrade; with policy.create the EvictionPolicy is an object of the
 * release (`helm get manifest`), created though no pod serves the webhook.
 */
import assert from "node:assert/strict";
import { X509Certificate } from "node:crypto";
import {
  CHART,
  dryRunApply,
  type K8sObject,
  labelQuery,
  NAMESPACE,
  objectsOf,
  only,
  renderChart,
  selectorsOf,
  templateChart,
} from "./harness/chart.ts";
import { type Envtest, startEnvtest } from "./harness/envtest.ts";
import { helm } from "./harness/helm.ts";

const ROOT = new URL("../", import.meta.url);
/** Two releases, by release name and the prefix of their objects' names. */
const RELEASES = [
  { release: "evictor", fullname: "evictor" },
  { release: "blue", fullname: "blue-evictor" },
];

/** kubectl that must succeed; its output. */
async function kubectlOk(
  e: Envtest,
  args: string[],
  stdin?: string,
): Promise<string> {
  const out = await e.kubectl(args, stdin === undefined ? {} : { stdin });
  assert.equal(out.code, 0, `kubectl ${args.join(" ")}: ${out.stderr}`);
  return out.stdout;
}

async function helmOk(e: Envtest, args: string[]): Promise<void> {
  const out = await helm([
    ...args,
    "--kubeconfig",
    e.kubeconfigPath,
    "--namespace",
    NAMESPACE,
  ]);
  assert.equal(out.code, 0, `helm ${args.join(" ")}: ${out.stderr}`);
}

/** The names of the objects of `kind` in the namespace that `selector` picks. */
async function picked(
  e: Envtest,
  kind: "Pod" | "Service",
  selector: Record<string, string>,
): Promise<string[]> {
  const out = await kubectlOk(e, [
    "-n",
    NAMESPACE,
    "get",
    kind === "Pod" ? "pods" : "services",
    "-l",
    labelQuery(selector),
    "-o",
    "jsonpath={.items[*].metadata.name}",
  ]);
  return out.split(" ").filter((n) => n !== "").sort();
}

/** The webhook Secret's data and the configuration's caBundles, as stored. */
async function storedTls(e: Envtest, fullname: string) {
  const secret = JSON.parse(
    await kubectlOk(e, [
      "-n",
      NAMESPACE,
      "get",
      "secret",
      `${fullname}-webhook-tls`,
      "-o",
      "json",
    ]),
  ) as { data: Record<string, string> };
  const config = JSON.parse(
    await kubectlOk(e, [
      "get",
      "validatingwebhookconfiguration",
      fullname,
      "-o",
      "json",
    ]),
  ) as { webhooks: { clientConfig: { caBundle: string } }[] };
  return {
    data: secret.data,
    caBundles: config.webhooks.map((w) => w.clientConfig.caBundle),
  };
}

/** The certificates of a base64 PEM bundle, as PEM. */
function certificatesOf(bundle: string): string[] {
  const pems = atob(bundle).match(
    /-----BEGIN CERTIFICATE-----[^-]+-----END CERTIFICATE-----/g,
  ) ?? [];
  // Each must parse: the API server would refuse the webhook otherwise.
  return pems.map((pem) => new X509Certificate(pem).toString());
}

Deno.test("on a cluster without cert-manager and the Prometheus operator the chart applies, installs twice in one namespace, and keeps or rotates its certificate", async (t) => {
  // Its own API server: no CRDs but those the chart brings. Nothing serves
  // the webhooks here (no kubelet runs the pods), and the chart's
  // configuration covers only Evictions and EvictionPolicies, which these
  // steps do not write.
  const e = await startEnvtest({ installCrds: false });
  try {
    await kubectlOk(e, [
      "apply",
      "-f",
      new URL("manifests/namespace.yaml", ROOT).pathname,
    ]);
    const crds = await kubectlOk(e, ["get", "crds", "-o", "name"]);
    assert.doesNotMatch(crds, /cert-manager\.io|monitoring\.coreos\.com/);

    await t.step("default values: a server-side dry run", async () => {
      const { text, objects } = await templateChart();
      await dryRunApply(e, text, objects.length, "default values");
    });

    await t.step(
      "two releases in one namespace: one server-side dry run",
      async () => {
        const [green, blue] = await Promise.all(
          RELEASES.map(({ release }) => templateChart([], release)),
        );
        assert.ok(green && blue);
        const text = `${green.text}\n---\n${blue.text}`;
        const count = objectsOf(text, "both").length;
        assert.equal(count, green.objects.length + blue.objects.length);
        await dryRunApply(e, text, count, "two releases");
      },
    );

    await t.step(
      "two releases install side by side; each one's selectors pick only its own pods and Services",
      async () => {
        // The credentials Secret both releases mount (the chart refuses to
        // install without it).
        await kubectlOk(e, [
          "-n",
          NAMESPACE,
          "create",
          "secret",
          "generic",
          "evictor-openstack",
          "--from-literal=clouds.yaml=clouds: {}",
        ]);
        // Helm refuses to install over an object another release owns: a
        // shared name would fail here.
        for (const { release } of RELEASES) {
          await helmOk(e, ["install", release, CHART]);
        }
        // Helm asked the cluster: no cert-manager, no Prometheus operator.
        const secrets = await kubectlOk(e, [
          "-n",
          NAMESPACE,
          "get",
          "secrets",
          "-o",
          "jsonpath={.items[*].metadata.name}",
        ]);
        for (const { fullname } of RELEASES) {
          assert.match(secrets, new RegExp(`\\b${fullname}-webhook-tls\\b`));
        }
        // One pod per release, as its Deployment would make it (no
        // controller-manager runs here): the API server does the selecting.
        const renderings = await Promise.all(
          RELEASES.map(({ release }) =>
            renderChart(["--api-versions", "monitoring.coreos.com/v1"], release)
          ),
        );
        for (const [i, { fullname }] of RELEASES.entries()) {
          const template = only(renderings[i] ?? [], "Deployment").spec
            .template;
          const pod = {
            apiVersion: "v1",
            kind: "Pod",
            metadata: {
              name: `${fullname}-pod`,
              namespace: NAMESPACE,
              labels: template.metadata.labels,
            },
            spec: template.spec,
          };
          await kubectlOk(e, ["create", "-f", "-"], JSON.stringify(pod));
        }
        for (const [i, { fullname }] of RELEASES.entries()) {
          const objects: K8sObject[] = renderings[i] ?? [];
          const selectors = objects.flatMap(selectorsOf);
          // the Deployment's (and its anti-affinity's), two Services', the
          // PDB's, the ServiceMonitor's
          assert.equal(
            selectors.length,
            6,
            selectors.map((s) => s.where).join(),
          );
          for (const s of selectors) {
            const want = s.selects === "Pod"
              ? [`${fullname}-pod`]
              : [`${fullname}-metrics`, `${fullname}-webhook`];
            assert.deepEqual(
              await picked(e, s.selects, s.matchLabels),
              want,
              s.where,
            );
          }
        }
      },
    );

    await t.step(
      "the chart's certificate: kept by upgrades; deleted, replaced, with both CAs trusted until the next upgrade",
      async () => {
        const [green, blue] = RELEASES;
        assert.ok(green && blue);
        const installed = await storedTls(e, green.fullname);
        const blueInstalled = await storedTls(e, blue.fullname);
        assert.deepEqual(installed.caBundles, [
          installed.data["ca.crt"],
          installed.data["ca.crt"],
        ]);
        assert.notEqual(
          blueInstalled.data["ca.crt"],
          installed.data["ca.crt"],
          "each release has its own CA",
        );

        await helmOk(e, ["upgrade", green.release, CHART]);
        assert.deepEqual(await storedTls(e, green.fullname), installed);

        await kubectlOk(e, [
          "-n",
          NAMESPACE,
          "delete",
          "secret",
          `${green.fullname}-webhook-tls`,
        ]);
        await helmOk(e, ["upgrade", green.release, CHART]);
        const rotated = await storedTls(e, green.fullname);
        const newCa = rotated.data["ca.crt"] ?? "";
        const oldCa = installed.data["ca.crt"] ?? "";
        assert.notEqual(newCa, oldCa, "a new CA");
        assert.notEqual(rotated.data["tls.key"], installed.data["tls.key"]);
        for (const bundle of rotated.caBundles) {
          assert.deepEqual(certificatesOf(bundle), [
            ...certificatesOf(newCa),
            ...certificatesOf(oldCa),
          ]);
        }

        await helmOk(e, ["upgrade", green.release, CHART]);
        assert.deepEqual(await storedTls(e, green.fullname), {
          data: rotated.data,
          caBundles: [newCa, newCa],
        });
        assert.deepEqual(
          await storedTls(e, blue.fullname),
          blueInstalled,
          "the other release's certificate is untouched",
        );
      },
    );

    await t.step("helm uninstall removes each release's objects", async () => {
      for (const { release, fullname } of RELEASES) {
        await kubectlOk(e, [
          "-n",
          NAMESPACE,
          "delete",
          "pod",
          `${fullname}-pod`,
          "--wait=false",
        ]);
        await helmOk(e, ["uninstall", release]);
        const left = [
          await kubectlOk(e, [
            "get",
            "clusterroles,clusterrolebindings,validatingwebhookconfigurations",
            "-o",
            "name",
          ]),
          await kubectlOk(e, [
            "-n",
            NAMESPACE,
            "get",
            "deployments,services,secrets,serviceaccounts,roles,rolebindings,poddisruptionbudgets,configmaps",
            "-o",
            "name",
          ]),
        ].join("\n").split("\n")
          // the credentials, made apart from the chart, stay
          .filter((l) => l !== "secret/evictor-openstack").join("\n");
        assert.doesNotMatch(left, new RegExp(`/${fullname}(-|$)`, "m"));
      }
    });

    await t.step(
      "with policy.create the EvictionPolicy is an object of the release, created though nothing serves the webhook, every later change checked; all namespaced objects but the Events Role in the release's namespace",
      async () => {
        await helmOk(e, [
          "install",
          "evictor",
          CHART,
          "--set",
          "policy.create=true",
          "--set",
          "policy.spec.maxConcurrentMigrations=3",
        ]);
        const out = await helm([
          "get",
          "manifest",
          "evictor",
          "--kubeconfig",
          e.kubeconfigPath,
          "--namespace",
          NAMESPACE,
        ]);
        assert.equal(out.code, 0, out.stderr);
        const objects = objectsOf(out.stdout, "helm get manifest");
        assert.deepEqual(
          objects.filter((o) => o.kind === "EvictionPolicy").map((o) =>
            o.metadata.name
          ),
          ["default"],
        );
        const stored = JSON.parse(
          await kubectlOk(e, [
            "get",
            "evictionpolicy",
            "default",
            "-o",
            "json",
          ]),
        ) as { spec: { maxConcurrentMigrations: number } };
        assert.equal(stored.spec.maxConcurrentMigrations, 3);
        assert.deepEqual(
          objects.filter((o) =>
            o.metadata.namespace !== undefined &&
            o.metadata.namespace !== NAMESPACE
          ).map((o) => `${o.kind} ${o.metadata.namespace}/${o.metadata.name}`)
            .sort(),
          ["Role default/evictor-events", "RoleBinding default/evictor-events"],
        );
        // The webhook still guards the policy: a change calls it, and
        // nothing serves it here, so the API server refuses (fail closed).
        const changed = await e.kubectl([
          "patch",
          "evictionpolicy",
          "default",
          "--type",
          "merge",
          "-p",
          '{"spec":{"maxConcurrentMigrations":4}}',
        ]);
        assert.notEqual(changed.code, 0, "changed without the webhook");
        assert.match(changed.stderr, /failed calling webhook/);
        // kept by helm uninstall
        await helmOk(e, ["uninstall", "evictor"]);
        await kubectlOk(e, ["get", "evictionpolicy", "default"]);
      },
    );
  } finally {
    await e.stop();
  }
});
