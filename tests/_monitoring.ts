/**
 * Test helpers for `manifests/monitoring/`: the rule groups of the
 * PrometheusRule, the dashboard's queries, the metric names a PromQL
 * expression reads, and the metric families of a Prometheus text exposition.
 *
 * @module
 */
import { parse as parseYaml } from "yaml";

const MONITORING = new URL("../manifests/monitoring/", import.meta.url);

/** One alerting rule of the PrometheusRule. */
export interface AlertRule {
  alert: string;
  expr: string;
  for?: string;
  labels?: Record<string, string>;
  annotations?: Record<string, string>;
}

/** A rule group as Prometheus (and promtool) reads it. */
export interface RuleGroup {
  name: string;
  rules: AlertRule[];
}

/**
 * The rule groups of `manifests/monitoring/prometheus_rule.yaml`: the one
 * source of the rules, written to a Prometheus rules file at test time.
 */
export async function ruleGroups(): Promise<RuleGroup[]> {
  const doc = parseYaml(
    await Deno.readTextFile(new URL("prometheus_rule.yaml", MONITORING)),
  ) as { kind?: string; spec?: { groups?: RuleGroup[] } };
  if (doc.kind !== "PrometheusRule" || !Array.isArray(doc.spec?.groups)) {
    throw new TypeError(
      `prometheus_rule.yaml: expected a PrometheusRule with spec.groups, got kind ${
        JSON.stringify(doc.kind)
      }`,
    );
  }
  return doc.spec.groups;
}

/** A panel query of the dashboard. */
export interface PanelQuery {
  panel: string;
  expr: string;
}

/** The Grafana dashboard JSON, parsed. */
export async function dashboard(): Promise<{
  panels: { type: string; title: string; targets?: { expr: string }[] }[];
}> {
  return JSON.parse(
    await Deno.readTextFile(new URL("evictor-dashboard.json", MONITORING)),
  );
}

/** Every query of every panel of the dashboard. */
export async function dashboardQueries(): Promise<PanelQuery[]> {
  const out: PanelQuery[] = [];
  for (const p of (await dashboard()).panels) {
    for (const t of p.targets ?? []) out.push({ panel: p.title, expr: t.expr });
  }
  return out;
}

// Words that are PromQL syntax, never metric names.
const KEYWORDS = new Set([
  "and",
  "or",
  "unless",
  "bool",
  "offset",
  "inf",
  "nan",
]);
// Keywords followed by a parenthesised list of label names.
const LABEL_LIST = new Set([
  "by",
  "without",
  "on",
  "ignoring",
  "group_left",
  "group_right",
]);

/**
 * The metric names a PromQL expression reads (Grafana variables such as
 * `$__rate_interval` allowed). Function and aggregation names, label
 * names in matchers and in `by (...)`-style lists, strings, numbers and
 * durations are not metric names.
 *
 * @example
 * ```ts
 * import { metricNames } from "./_monitoring.ts";
 * const names = metricNames('sum by (kind) (rate(a_total{x="y"}[5m])) / b');
 * console.assert([...names].join() === "a_total,b");
 * ```
 */
export function metricNames(expr: string): Set<string> {
  // Strings first (they may hold braces), then matchers and ranges.
  const bare = expr
    .replace(/"(?:[^"\\]|\\.)*"|'(?:[^'\\]|\\.)*'|`[^`]*`/g, '""')
    .replace(/\{[^}]*\}/g, " ")
    .replace(/\[[^\]]*\]/g, " ");
  const tokens = bare.match(
    /\d[\w.]*|\$\{[^}]*\}|\$\w+|[A-Za-z_:][\w:]*|\(|\)|[^\s\w$()]+/g,
  ) ?? [];
  const names = new Set<string>();
  for (let i = 0; i < tokens.length; i++) {
    const t = tokens[i] ?? "";
    if (!/^[A-Za-z_:]/.test(t)) continue;
    const next = tokens[i + 1]?.toLowerCase();
    if (LABEL_LIST.has(t.toLowerCase()) && next === "(") {
      // skip the label list up to its closing parenthesis
      while (i < tokens.length && tokens[i] !== ")") i++;
      continue;
    }
    // a function, or an aggregation with its clause first (`sum by (x) (`)
    if (next === "(" || next === "by" || next === "without") continue;
    if (KEYWORDS.has(t.toLowerCase())) continue;
    names.add(t);
  }
  return names;
}

/** Metric families of a text exposition: name to type (`# TYPE` lines). */
export function metricFamilies(exposition: string): Map<string, string> {
  const families = new Map<string, string>();
  for (const m of exposition.matchAll(/^# TYPE (\S+) (\S+)$/gm)) {
    families.set(m[1] ?? "", m[2] ?? "");
  }
  return families;
}

/**
 * Whether `name` is exposed by `families`: as a family, or as the
 * `_bucket`, `_sum` or `_count` series of a histogram (`_sum`, `_count`
 * of a summary).
 *
 * @example
 * ```ts
 * import { exposes } from "./_monitoring.ts";
 * const f = new Map([["d_seconds", "histogram"], ["c_total", "counter"]]);
 * console.assert(exposes(f, "d_seconds_bucket") && !exposes(f, "c_total_sum"));
 * ```
 */
export function exposes(families: Map<string, string>, name: string): boolean {
  if (families.has(name)) return true;
  const m = /^(.+)_(bucket|sum|count)$/.exec(name);
  if (m === null) return false;
  const type = families.get(m[1] ?? "");
  return type === "histogram" || (type === "summary" && m[2] !== "bucket");
}

/**
 * The sum of a metric's samples on a text exposition over the label sets
 * that contain `labels` (all of them by default); 0 when it has none.
 *
 * @example
 * ```ts
 * import { metricSum } from "./_monitoring.ts";
 * const text = 'looks_total{source="view"} 3\nlooks_total{source="nova"} 1\n';
 * console.assert(metricSum(text, "looks_total") === 4);
 * console.assert(metricSum(text, "looks_total", 'source="view"') === 3);
 * ```
 */
export function metricSum(text: string, name: string, labels = ""): number {
  let sum = 0;
  for (const line of text.split("\n")) {
    if (!line.startsWith(name)) continue;
    const rest = line.slice(name.length);
    if (rest !== "" && !rest.startsWith("{") && !rest.startsWith(" ")) continue;
    if (!rest.includes(labels)) continue;
    sum += Number(line.split(" ").at(-1));
  }
  return sum;
}

/**
 * Scrapes a `/metrics` endpoint served with `--insecure-metrics` (the secured
 * one, behind TokenReview and SubjectAccessReview, is tested in
 * tests/deploy_test.ts).
 */
export async function scrapeMetrics(url: string): Promise<string> {
  const res = await fetch(url);
  const text = await res.text();
  if (!res.ok) {
    throw new Error(`GET ${url}: HTTP ${res.status}: ${text.slice(0, 200)}`);
  }
  return text;
}

/**
 * The anchors GitHub gives the headings of a Markdown file: lower case,
 * punctuation other than `-` and `_` dropped, spaces to `-`.
 *
 * @example
 * ```ts
 * import { headingAnchors } from "./_monitoring.ts";
 * console.assert(headingAnchors("## Alerts, and a dashboard\n").has("alerts-and-a-dashboard"));
 * ```
 */
export function headingAnchors(markdown: string): Set<string> {
  const anchors = new Set<string>();
  let fenced = false;
  for (const line of markdown.split("\n")) {
    if (line.startsWith("```")) fenced = !fenced;
    const m = fenced ? null : /^#{1,6} (.+)$/.exec(line);
    if (m === null) continue;
    anchors.add(
      (m[1] ?? "").trim().toLowerCase().replace(/`/g, "")
        .replace(/[^\p{L}\p{N} _-]/gu, "").replace(/ /g, "-"),
    );
  }
  return anchors;
}

/** A label matcher of a PromQL selector. */
export interface Matcher {
  label: string;
  op: "=" | "!=" | "=~" | "!~";
  value: string;
}

/** A selector with label matchers, e.g. `a_total{x="y"}`. */
export interface Selector {
  name: string;
  matchers: Matcher[];
}

const STRING = String.raw`"(?:[^"\\]|\\.)*"`;

/**
 * The selectors of a PromQL expression that carry label matchers (values
 * as written: the expressions here use no escapes).
 *
 * @example
 * ```ts
 * import { selectors } from "./_monitoring.ts";
 * const [s] = selectors('rate(a{x="}",y=~"b|c"}[5m])');
 * console.assert(s?.name === "a" && s.matchers[1]?.op === "=~");
 * ```
 */
export function selectors(expr: string): Selector[] {
  const out: Selector[] = [];
  const re = new RegExp(
    String.raw`([A-Za-z_:][\w:]*)\s*\{((?:[^}"]|${STRING})*)\}`,
    "g",
  );
  for (const m of expr.matchAll(re)) {
    const matchers: Matcher[] = [];
    const body = m[2] ?? "";
    for (
      const l of body.matchAll(
        new RegExp(String.raw`(\w+)\s*(=~|!~|!=|=)\s*(${STRING})`, "g"),
      )
    ) {
      matchers.push({
        label: l[1] ?? "",
        op: l[2] as Matcher["op"],
        value: JSON.parse(l[3] ?? '""'),
      });
    }
    out.push({ name: m[1] ?? "", matchers });
  }
  return out;
}

/** One sample line of a text exposition. */
export interface Sample {
  name: string;
  labels: Record<string, string>;
}

/** The samples of a text exposition (values left out). */
export function samples(exposition: string): Sample[] {
  const out: Sample[] = [];
  for (const line of exposition.split("\n")) {
    const m = /^([A-Za-z_:][\w:]*)(?:\{(.*)\})? \S+/.exec(line);
    if (m === null) continue;
    const labels: Record<string, string> = {};
    for (
      const l of (m[2] ?? "").matchAll(new RegExp(`(\\w+)=(${STRING})`, "g"))
    ) {
      labels[l[1] ?? ""] = JSON.parse(l[2] ?? '""');
    }
    out.push({ name: m[1] ?? "", labels });
  }
  return out;
}

/**
 * Whether `sample` satisfies the positive matchers (`=`, `=~`) of
 * `selector`: a selector whose equality matchers no real series has
 * selects nothing, and its alert never fires.
 */
export function satisfiesPositive(sample: Sample, selector: Selector): boolean {
  if (sample.name !== selector.name) return false;
  return selector.matchers.every((m) => {
    const v = sample.labels[m.label] ?? "";
    if (m.op === "=") return v === m.value;
    if (m.op === "=~") return new RegExp(`^(?:${m.value})$`).test(v);
    return true;
  });
}
