/**
 * charts/evictor/ rendered by the real Helm ({@linkcode helm}) and read
 * back as objects, for the chart's tests.
 *
 * @module
 */
import assert from "node:assert/strict";
import { parseAllDocuments } from "yaml";
import type { Envtest } from "./envtest.ts";
import { helm } from "./helm.ts";

/** The chart, from the repository root (where {@linkcode helm} runs). */
export const CHART = "charts/evictor";
/** The namespace the chart's tests install into. */
export const NAMESPACE = "evictor-system";

/** A Kubernetes object as YAML gives it. */
export interface K8sObject {
  apiVersion: string;
  kind: string;
  metadata: {
    name: string;
    namespace?: string;
    labels?: Record<string, string>;
    annotations?: Record<string, string>;
  };
  // deno-lint-ignore no-explicit-any
  spec?: any;
  [field: string]: unknown;
}

/**
 * The objects of a multi-document YAML stream; throws naming `what` when a
 * document does not parse.
 *
 * @example
 * ```ts ignore
 * const [o] = objectsOf("kind: Secret\n", "example");
 * ```
 */
export function objectsOf(text: string, what: string): K8sObject[] {
  const objects: K8sObject[] = [];
  for (const doc of parseAllDocuments(text)) {
    if (doc.errors.length > 0) {
      throw new Error(`${what}: ${doc.errors.map(String).join("; ")}`);
    }
    const value = doc.toJS() as K8sObject | null;
    if (value !== null) objects.push(value);
  }
  return objects;
}

/**
 * An object's identity: kind, namespace ("-" for a cluster-scoped one) and
 * name.
 *
 * @example
 * ```ts ignore
 * keyOf(secret); // "Secret evictor-system/evictor-webhook-tls"
 * ```
 */
export function keyOf(o: K8sObject): string {
  return `${o.kind} ${o.metadata.namespace ?? "-"}/${o.metadata.name}`;
}

/**
 * The one object of `kind` (and `name`) among `objects`; fails the test
 * when there is none or more than one.
 *
 * @example
 * ```ts ignore
 * const deployment = only(await renderChart(), "Deployment");
 * ```
 */
export function only(
  objects: K8sObject[],
  kind: string,
  name?: string,
): K8sObject {
  const found = objects.filter((o) =>
    o.kind === kind && (name === undefined || o.metadata.name === name)
  );
  assert.equal(found.length, 1, `one ${kind} ${name ?? ""}`);
  return found[0] as K8sObject;
}

/**
 * `helm template` of the chart as release `release` in
 * {@linkcode NAMESPACE}, CRDs included, with `args`: its text and objects.
 * Fails the test when Helm refuses.
 *
 * @example
 * ```ts ignore
 * const { objects } = await templateChart(["--set", "replicas=3"], "blue");
 * ```
 */
export async function templateChart(
  args: string[] = [],
  release = "evictor",
): Promise<{ text: string; objects: K8sObject[] }> {
  const what = `helm template ${release} ${args.join(" ")}`;
  const out = await helm([
    "template",
    release,
    CHART,
    "--namespace",
    NAMESPACE,
    "--include-crds",
    ...args,
  ]);
  assert.equal(out.code, 0, `${what}: ${out.stderr}`);
  return { text: out.stdout, objects: objectsOf(out.stdout, what) };
}

/**
 * The objects `helm template` renders (see {@linkcode templateChart}).
 *
 * @example
 * ```ts ignore
 * const objects = await renderChart(["--api-versions", "monitoring.coreos.com/v1"]);
 * ```
 */
export async function renderChart(
  args: string[] = [],
  release = "evictor",
): Promise<K8sObject[]> {
  return (await templateChart(args, release)).objects;
}

/**
 * Applies a rendering (`text`, holding `count` objects) with
 * `kubectl apply --server-side --dry-run=server` and checks that the API
 * server accepted every object.
 *
 * @example
 * ```ts ignore
 * const { text, objects } = await templateChart();
 * await dryRunApply(env, text, objects.length, "default values");
 * ```
 */
export async function dryRunApply(
  e: Envtest,
  text: string,
  count: number,
  what: string,
): Promise<void> {
  const applied = await e.kubectl([
    "apply",
    "--server-side",
    "--dry-run=server",
    "-f",
    "-",
  ], { stdin: text });
  assert.equal(applied.code, 0, `${what}: ${applied.stderr}`);
  const lines = applied.stdout.trim().split("\n");
  assert.equal(lines.length, count, applied.stdout);
  for (const line of lines) assert.match(line, / \(server dry run\)$/);
}

type Labels = Record<string, string>;

/** One label selector of a rendered object, and what it selects. */
export interface Selector {
  /** Where it is, e.g. `Deployment evictor-system/evictor spec.selector`. */
  where: string;
  selects: "Pod" | "Service";
  matchLabels: Labels;
}

/**
 * Every label selector in `o`: a Deployment's own and its default pod
 * anti-affinity's, a Service's, a PodDisruptionBudget's (pods), a
 * ServiceMonitor's (Services). The objects hold the selectors themselves,
 * so changing a returned `matchLabels` changes `o`.
 *
 * @example
 * ```ts ignore
 * for (const s of selectorsOf(only(objects, "PodDisruptionBudget"))) {
 *   console.log(s.where, s.matchLabels);
 * }
 * ```
 */
export function selectorsOf(o: K8sObject): Selector[] {
  const where = (path: string) => `${keyOf(o)} ${path}`;
  switch (o.kind) {
    case "Deployment": {
      const terms: {
        podAffinityTerm: { labelSelector: { matchLabels: Labels } };
      }[] = o.spec.template.spec.affinity?.podAntiAffinity
        ?.preferredDuringSchedulingIgnoredDuringExecution ?? [];
      return [
        {
          where: where("spec.selector"),
          selects: "Pod",
          matchLabels: o.spec.selector.matchLabels,
        },
        ...terms.map((t, i) => ({
          where: where(`podAntiAffinity[${i}]`),
          selects: "Pod" as const,
          matchLabels: t.podAffinityTerm.labelSelector.matchLabels,
        })),
      ];
    }
    case "Service":
      return [{
        where: where("spec.selector"),
        selects: "Pod",
        matchLabels: o.spec.selector,
      }];
    case "PodDisruptionBudget":
      return [{
        where: where("spec.selector"),
        selects: "Pod",
        matchLabels: o.spec.selector.matchLabels,
      }];
    case "ServiceMonitor":
      return [{
        where: where("spec.selector"),
        selects: "Service",
        matchLabels: o.spec.selector.matchLabels,
      }];
    default:
      return [];
  }
}

/**
 * A selector as `kubectl get -l` takes it.
 *
 * @example
 * ```ts ignore
 * labelQuery({ a: "1", b: "2" }); // "a=1,b=2"
 * ```
 */
export function labelQuery(matchLabels: Record<string, string>): string {
  return Object.entries(matchLabels).map(([k, v]) => `${k}=${v}`).join(",");
}
