/**
 * `kubectl evictor status [HYPERVISOR] [-o FORMAT] [-w]`: the Evictions as
 * `kubectl get evictions` shows them (the CRD's printer columns), their
 * names, JSON/YAML as kubectl prints them, kubectl's jsonpath and
 * custom-columns, or the summary shape; with `-w`, then every change as
 * `kubectl get -w` prints it.
 *
 * @module
 */
import type * as k8s from "@kubernetes/client-node";
import { REASON_NOT_IN_NOVA } from "../controllers/conditions.ts";
import {
  type Eviction,
  EvictionResource,
  EvictionSchema,
} from "../models/mod.ts";
import { customObjectsApi, type KubeTarget } from "./kube_config.ts";
import { customColumnCells, customColumnsTable } from "./custom_columns.ts";
import { drainOutcome } from "./eviction_state.ts";
import { executeJsonPath } from "./jsonpath.ts";
import {
  kubeList,
  type OutputSpec,
  parseOutput,
  renderKube,
} from "./kube_output.ts";
import { statusData, statusNames, statusRows } from "./status_output.ts";
import { alignColumns } from "./columns.ts";
import { copyRows } from "./copy_progress.ts";
import { forecastLine } from "./forecast_line.ts";
import { watchEvictions } from "./eviction_watch.ts";
import {
  parseCommand,
  renderData,
  timeoutFlag,
  UsageError,
  usageOf,
} from "./usage.ts";

const { group, version, plural } = EvictionResource;

/** What `status` needs. */
export interface StatusIo {
  kubeConfig: (target: KubeTarget) => Promise<k8s.KubeConfig>;
  out: (line: string) => void;
  err: (line: string) => void;
  warn: (text: string) => void;
}

/** One Eviction as the API server sent it, and as the plugin reads it. */
interface Item {
  raw: Record<string, unknown>;
  eviction: Eviction;
}

function parseItem(raw: unknown): Item | undefined {
  const parsed = EvictionSchema.safeParse(raw);
  return parsed.success
    ? { raw: raw as Record<string, unknown>, eviction: parsed.data }
    : undefined;
}

/**
 * Runs `status` with `args`; returns the exit code.
 *
 * @example
 * ```ts ignore
 * const code = await runStatus(["-o", "wide"], io);
 * ```
 */
export async function runStatus(args: string[], io: StatusIo): Promise<number> {
  const { values, positionals } = parseCommand("status", args, {
    output: { type: "string", short: "o", default: "table" },
    watch: { type: "boolean", short: "w", default: false },
    timeout: { type: "string", default: "0" },
  });
  if (values.help) {
    io.out(usageOf("status"));
    return 0;
  }
  if (positionals.length > 1) {
    throw new UsageError(
      `status takes at most one HYPERVISOR, got ${positionals.length}`,
      "status",
    );
  }
  const spec = parseOutput(values.output);
  const timeoutMs = timeoutFlag("status", values.timeout);
  const kc = await io.kubeConfig({
    kubeconfig: values.kubeconfig,
    context: values.context,
  });
  const api = customObjectsApi(kc, io.warn);
  const [name] = positionals;
  const items: Item[] = [];
  if (name) {
    const raw = await api.getClusterCustomObject({
      group,
      version,
      plural,
      name,
    }) as Record<string, unknown>;
    // an object the plugin cannot read is one line (error_line.ts)
    items.push({ raw, eviction: EvictionSchema.parse(raw) });
  } else {
    const list = await api.listClusterCustomObject({
      group,
      version,
      plural,
    }) as { items?: unknown[] };
    for (const raw of list.items ?? []) {
      const item = parseItem(raw);
      if (item !== undefined) items.push(item);
    }
  }
  items.sort((a, b) =>
    (a.eviction.metadata?.name ?? "").localeCompare(
      b.eviction.metadata?.name ?? "",
    )
  );
  const widths = printAll(spec, items, name !== undefined, io);
  if (!values.watch) return 0;
  await watchChanges(kc, api, spec, name, items, widths, timeoutMs, io);
  return 0;
}

/** Prints the listed Evictions; returns the table's column widths. */
function printAll(
  spec: OutputSpec,
  items: readonly Item[],
  one: boolean,
  io: StatusIo,
): number[] {
  const evictions = items.map((i) => i.eviction);
  const raws = items.map((i) => i.raw);
  // kubectl runs templates and prints JSON against the one object named,
  // else against a List
  const data = one && raws[0] !== undefined ? raws[0] : kubeList(raws);
  switch (spec.kind) {
    case "table":
    case "wide": {
      if (items.length === 0) {
        io.err("No evictions found.");
        return [];
      }
      const nowMs = Date.now();
      const rows = statusRows(evictions, spec.kind === "wide", nowMs);
      io.out(alignColumns(rows).join("\n"));
      const ends = evictions.flatMap((e) => forecastLine(e, nowMs) ?? []);
      if (ends.length > 0) io.out(["", ...ends].join("\n"));
      if (spec.kind === "table") notes(evictions, io);
      else copies(raws, io);
      return widthsOf(rows);
    }
    case "name":
      if (items.length > 0) io.out(statusNames(evictions));
      return [];
    case "json":
    case "yaml":
      io.out(renderKube(data, spec.kind));
      return [];
    case "summary-json":
    case "summary-yaml":
      io.out(
        renderData(
          statusData(evictions),
          spec.kind === "summary-json" ? "json" : "yaml",
        ),
      );
      return [];
    case "jsonpath":
      io.out(withoutLastNewline(executeJsonPath(spec.template, data)));
      return [];
    case "custom-columns": {
      io.out(customColumnsTable(spec.columns, raws));
      return widthsOf([
        spec.columns.map((c) => c.header),
        ...raws.map((r) => customColumnCells(spec.columns, r)),
      ]);
    }
  }
}

/** A template's output as kubectl prints it: `out` ends every line itself. */
function withoutLastNewline(text: string): string {
  return text.endsWith("\n") ? text.slice(0, -1) : text;
}

/** What the table has no room for: these must not read as drained. */
function notes(evictions: readonly Eviction[], io: StatusIo) {
  for (const e of evictions) {
    const name = e.metadata?.name ?? e.spec.hypervisor;
    if (drainOutcome(e) === REASON_NOT_IN_NOVA) {
      io.err(
        `note: ${name}: nothing drained: Nova has no compute service named ${e.spec.hypervisor}`,
      );
    }
    const failed = e.status?.failed ?? [];
    if (failed.length > 0) {
      io.err(
        `note: ${name}: ${failed.length} VMs failed: ${
          failed.map((f) => f.id).join(", ")
        } (-o wide says why; kubectl evictor retry ${name} re-arms them)`,
      );
    }
  }
}

/** `-o wide`: then each copy in flight with its progress, if any. */
function copies(raws: readonly Record<string, unknown>[], io: StatusIo) {
  const rows = copyRows(raws, Date.now());
  if (rows.length < 2) return;
  io.out("");
  io.out(alignColumns(rows).join("\n"));
}

function widthsOf(rows: readonly (readonly string[])[]): number[] {
  return (rows[0] ?? []).map((_, i) =>
    Math.max(...rows.map((r) => (r[i] ?? "").length))
  );
}

/** A row padded to `widths` (widened where it is wider), as kubectl -w. */
function padded(cells: readonly string[], widths: number[]): string {
  return cells.map((c, i) => {
    widths[i] = Math.max(widths[i] ?? 0, c.length);
    return c.padEnd(widths[i] ?? 0);
  }).join("   ").trimEnd();
}

/** `-w`: a row (or object) for every change, until `timeoutMs` passes. */
async function watchChanges(
  kc: k8s.KubeConfig,
  api: k8s.CustomObjectsApi,
  spec: OutputSpec,
  name: string | undefined,
  printed: readonly Item[],
  widths: number[],
  timeoutMs: number,
  io: StatusIo,
): Promise<void> {
  const stop = new AbortController();
  const timer = timeoutMs > 0
    ? setTimeout(() => stop.abort(), timeoutMs)
    : undefined;
  // what was printed of each, so that the list under the watch repeats
  // nothing, and a status write of fields no column shows adds no row
  const last = new Map(
    printed.map((i) => [i.eviction.metadata?.name ?? "", changeKey(spec, i)]),
  );
  const header = headerOf(spec);
  // none were listed: the header comes with the first row
  let headed = widths.length > 0 || header === undefined;
  if (!headed && header !== undefined) widths.push(...widthsOf([header]));
  try {
    await watchEvictions(kc, api, ({ object }) => {
      const item = parseItem(object);
      const n = item?.eviction.metadata?.name;
      if (item === undefined || n === undefined) return;
      if (name !== undefined && n !== name) return;
      const key = changeKey(spec, item);
      if (last.get(n) === key) return;
      last.set(n, key);
      const text = changeText(spec, item, widths);
      if (!headed && header !== undefined) io.out(padded(header, widths));
      headed = true;
      io.out(text);
    }, stop.signal);
  } finally {
    clearTimeout(timer);
  }
}

/** What tells one printed change from the next: the row (ages aside), else the version. */
function changeKey(spec: OutputSpec, item: Item): string {
  if (spec.kind === "table" || spec.kind === "wide") {
    return (statusRows([item.eviction], spec.kind === "wide", 0)[1] ?? [])
      .join("\t");
  }
  return item.eviction.metadata?.resourceVersion ?? JSON.stringify(item.raw);
}

function headerOf(spec: OutputSpec): string[] | undefined {
  if (spec.kind === "table" || spec.kind === "wide") {
    return statusRows([], spec.kind === "wide", 0)[0];
  }
  if (spec.kind === "custom-columns") return spec.columns.map((c) => c.header);
  return undefined;
}

/** One change as `kubectl get -w` prints it in `spec`'s format. */
function changeText(
  spec: OutputSpec,
  item: Item,
  widths: number[],
): string {
  switch (spec.kind) {
    case "table":
    case "wide": {
      const rows = statusRows(
        [item.eviction],
        spec.kind === "wide",
        Date.now(),
      );
      return padded(rows[1] ?? [], widths);
    }
    case "name":
      return statusNames([item.eviction]);
    case "json":
    case "yaml":
      return renderKube(kubeList([item.raw]).items[0], spec.kind);
    case "summary-json":
    case "summary-yaml":
      return renderData(
        statusData([item.eviction]).evictions[0],
        spec.kind === "summary-json" ? "json" : "yaml",
      );
    case "jsonpath":
      return withoutLastNewline(executeJsonPath(spec.template, item.raw));
    case "custom-columns":
      return padded(customColumnCells(spec.columns, item.raw), widths);
  }
}
