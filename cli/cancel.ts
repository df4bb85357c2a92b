/**
 * `kubectl evictor cancel`: undoes a drain by deleting its Eviction (no
 * pass runs on a deleted one; its finalizer lets the copies in flight
 * settle, or aborts ours with `--abort-in-flight`, then re-enables the
 * service). A drain that Hypervisor maintenance asked for would come back
 * at once: refused unless `--clear-maintenance`.
 *
 * @module
 */
import * as k8s from "@kubernetes/client-node";
import {
  type Eviction,
  EvictionResource,
  EvictionSchema,
  type Hypervisor,
  HypervisorResource,
  HypervisorSchema,
} from "../models/mod.ts";
import { ABORT_IN_FLIGHT_ANNOTATION } from "../controllers/eviction/abort_in_flight.ts";
import { drainRequested } from "../controllers/hypervisor/decide.ts";
import { type EvictionChange, watchWithin } from "./eviction_watch.ts";
import { ProgressLines } from "./progress.ts";
import { customObjectsApi, type KubeTarget } from "./kube_config.ts";
import { objectNames, parseCommand, timeoutFlag, usageOf } from "./usage.ts";

/** Where cancel writes and how it waits (the plugin's io fits it). */
export interface CancelIo {
  /** The cluster of the command's `--kubeconfig` and `--context`. */
  kubeConfig: (target: KubeTarget) => Promise<k8s.KubeConfig>;
  /** Standard output: what was done. */
  out: (line: string) => void;
  /** Standard error: progress, notes and `error:` lines. */
  err: (line: string) => void;
  /** Rewrites the current line (a TTY) instead of adding one. */
  interactive: boolean;
}

/** The flags that change what cancel does. */
export interface CancelOptions {
  /** Abort our live migrations in flight instead of letting them finish. */
  abortInFlight: boolean;
  /** Clear the Hypervisor's spec.maintenance before the delete. */
  clearMaintenance: boolean;
}

/** What cancel knows of one host before it changes anything. */
export interface CancelTarget {
  /** The host named on the command line. */
  host: string;
  /** The Evictions that drain it (spec.hypervisor, or named after it). */
  evictions: readonly Eviction[];
  /** Its Hypervisor, when there is one. */
  hypervisor: Hypervisor | undefined;
}

/** One change, in the order cancel makes them. */
export type CancelStep =
  | { kind: "annotate"; eviction: string }
  | { kind: "clearMaintenance"; hypervisor: string; mode: string }
  | { kind: "delete"; eviction: string; host: string; inFlight: number };

/** The changes for one host, or why there are none. */
export type CancelDecision =
  | { ok: true; steps: CancelStep[] }
  | { ok: false; error: string };

const evictionRef = (name: string) =>
  `eviction.${EvictionResource.group}/${name}`;

/**
 * What cancelling one host takes, in order (annotate, clear maintenance,
 * delete), or why it is refused, with the way out.
 *
 * @example
 * ```ts
 * import { cancelPlan } from "./cancel.ts";
 * const d = cancelPlan({ host: "n1", hypervisor: undefined,
 *   evictions: [{ metadata: { name: "n1" }, spec: { hypervisor: "n1", reason: "r" } }] },
 *   { abortInFlight: false, clearMaintenance: false });
 * console.assert(d.ok && d.steps[0]?.kind === "delete");
 * ```
 */
export function cancelPlan(
  t: CancelTarget,
  o: CancelOptions,
): CancelDecision {
  const names = t.evictions.flatMap((e) => e.metadata?.name ?? []).sort();
  if (names.length === 0) {
    return {
      ok: false,
      error:
        `no Eviction drains ${t.host}: nothing to cancel (kubectl evictor status lists the drains)`,
    };
  }
  const mode = t.hypervisor?.spec?.maintenance ?? "";
  const hvName = t.hypervisor?.metadata?.name ?? t.host;
  const steps: CancelStep[] = [];
  if (drainRequested(mode)) {
    if (!o.clearMaintenance) {
      const why = t.hypervisor?.spec?.maintenanceReason?.trim();
      return {
        ok: false,
        error: `${t.host}: Hypervisor ${hvName} is in maintenance ${
          JSON.stringify(mode)
        }${
          why ? ` (${JSON.stringify(why)})` : ""
        }, which recreates its Eviction as soon as it is deleted, and keeps the compute service disabled; to end the drain, clear the maintenance: add --clear-maintenance, or kubectl patch hypervisor ${hvName} --type merge -p '{"spec":{"maintenance":""}}'`,
      };
    }
  }
  if (o.abortInFlight) {
    for (const eviction of names) steps.push({ kind: "annotate", eviction });
  }
  if (drainRequested(mode)) {
    steps.push({ kind: "clearMaintenance", hypervisor: hvName, mode });
  }
  for (const e of t.evictions) {
    const eviction = e.metadata?.name;
    if (eviction === undefined) continue;
    steps.push({
      kind: "delete",
      eviction,
      host: e.spec.hypervisor,
      inFlight: e.status?.inFlightCount ?? e.status?.inFlight?.length ?? 0,
    });
  }
  return { ok: true, steps };
}

/**
 * The line that says what a step did (kubectl's words: "NAME verb",
 * with " (dry run)" when nothing changed).
 *
 * @example
 * ```ts
 * import { stepLine } from "./cancel.ts";
 * console.log(stepLine({ kind: "annotate", eviction: "n1" }, false, true));
 * // eviction.kvm.cloud.sap/n1 annotated evictor.kvm.cloud.sap/abort-in-flight=true (dry run)
 * ```
 */
export function stepLine(
  step: CancelStep,
  abortInFlight: boolean,
  dryRun: boolean,
): string {
  const dry = dryRun ? " (dry run)" : "";
  switch (step.kind) {
    case "annotate":
      return `${
        evictionRef(step.eviction)
      } annotated ${ABORT_IN_FLIGHT_ANNOTATION}=true${dry}`;
    case "clearMaintenance":
      return `hypervisor.${HypervisorResource.group}/${step.hypervisor} maintenance ${
        JSON.stringify(step.mode)
      } cleared${dry}`;
    case "delete": {
      const copies = step.inFlight === 0
        ? "nothing in flight"
        : abortInFlight
        ? `its ${step.inFlight} migrations in flight are aborted (live ones; cold ones finish)`
        : `its ${step.inFlight} migrations in flight finish`;
      return `${
        evictionRef(step.eviction)
      } deleted${dry}: no new migration starts; ${copies}, then the compute service of ${step.host} is re-enabled unless someone else disabled it`;
    }
  }
}

/**
 * Runs `cancel` with its arguments (after the command word); returns the
 * exit code: 0 done (with `--wait`: every Eviction gone), 1 refused, an
 * error or `--timeout` passed. A usage mistake throws a UsageError.
 *
 * @example
 * ```ts ignore
 * const code = await runCancel(["node042", "--wait"], io, warn);
 * ```
 */
export async function runCancel(
  args: string[],
  io: CancelIo,
  warn: (text: string) => void,
): Promise<number> {
  const { values, positionals } = parseCommand("cancel", args, {
    "abort-in-flight": { type: "boolean", default: false },
    "clear-maintenance": { type: "boolean", default: false },
    "dry-run": { type: "boolean", default: false },
    wait: { type: "boolean", default: false },
    timeout: { type: "string", default: "0" },
  });
  if (values.help === true) {
    io.out(usageOf("cancel"));
    return 0;
  }
  const hosts = objectNames("cancel", positionals, "HOST");
  const timeoutMs = timeoutFlag("cancel", values.timeout);
  const options: CancelOptions = {
    abortInFlight: values["abort-in-flight"],
    clearMaintenance: values["clear-maintenance"],
  };
  const kc = await io.kubeConfig({
    kubeconfig: values.kubeconfig,
    context: values.context,
  });
  const api = customObjectsApi(kc, warn);
  const decided = await decideAll(api, hosts, options);
  const refused = decided.flatMap((d) => d.ok ? [] : [d.error]);
  if (refused.length > 0) {
    for (const r of refused) io.err(`error: ${r}`);
    if (hosts.length > 1) io.err("note: nothing was changed");
    return 1;
  }
  const dryRun = values["dry-run"];
  const deleted: Eviction[] = [];
  for (const d of decided) {
    if (!d.ok) continue;
    for (const step of d.steps) {
      if (!dryRun) await apply(api, step);
      io.out(stepLine(step, options.abortInFlight, dryRun));
      if (step.kind !== "delete") continue;
      const e = d.evictions.find((x) => x.metadata?.name === step.eviction);
      if (e !== undefined) deleted.push(e);
    }
  }
  if (dryRun || !values.wait) return 0;
  return await waitGone(kc, api, deleted, io, timeoutMs);
}

/**
 * Every host's decision, made before anything changes: a cancel refused
 * for one host changes nothing.
 */
async function decideAll(
  api: k8s.CustomObjectsApi,
  hosts: readonly string[],
  options: CancelOptions,
): Promise<(CancelDecision & { evictions: readonly Eviction[] })[]> {
  const all = await listEvictions(api);
  return await Promise.all(hosts.map(async (host) => {
    const evictions = all.filter((e) =>
      e.spec.hypervisor === host || e.metadata?.name === host
    );
    // HOST may name an Eviction of another host: that host's maintenance
    const drained = evictions.find((e) => e.spec.hypervisor === host) ??
      evictions[0];
    const hypervisor = await getHypervisor(
      api,
      drained?.spec.hypervisor ?? host,
    );
    return {
      ...cancelPlan({ host, evictions, hypervisor }, options),
      evictions,
    };
  }));
}

const { group, version } = EvictionResource;

async function listEvictions(api: k8s.CustomObjectsApi): Promise<Eviction[]> {
  const list = await api.listClusterCustomObject({
    group,
    version,
    plural: EvictionResource.plural,
  }) as { items?: unknown[] };
  return (list.items ?? []).flatMap((item) => {
    const parsed = EvictionSchema.safeParse(item);
    return parsed.success ? [parsed.data] : [];
  });
}

async function getHypervisor(
  api: k8s.CustomObjectsApi,
  name: string,
): Promise<Hypervisor | undefined> {
  try {
    return HypervisorSchema.parse(
      await api.getClusterCustomObject({
        group: HypervisorResource.group,
        version: HypervisorResource.version,
        plural: HypervisorResource.plural,
        name,
      }),
    );
  } catch (e) {
    if (e instanceof k8s.ApiException && e.code === 404) return undefined;
    throw e;
  }
}

const MERGE = k8s.setHeaderOptions(
  "Content-Type",
  k8s.PatchStrategy.MergePatch,
);

async function apply(api: k8s.CustomObjectsApi, step: CancelStep) {
  try {
    switch (step.kind) {
      case "annotate":
        await api.patchClusterCustomObject({
          group,
          version,
          plural: EvictionResource.plural,
          name: step.eviction,
          body: {
            metadata: { annotations: { [ABORT_IN_FLIGHT_ANNOTATION]: "true" } },
          },
        }, MERGE);
        return;
      case "clearMaintenance":
        await api.patchClusterCustomObject({
          group: HypervisorResource.group,
          version: HypervisorResource.version,
          plural: HypervisorResource.plural,
          name: step.hypervisor,
          body: { spec: { maintenance: "" } },
        }, MERGE);
        return;
      case "delete":
        await api.deleteClusterCustomObject({
          group,
          version,
          plural: EvictionResource.plural,
          name: step.eviction,
        });
        return;
    }
  } catch (e) {
    // gone meanwhile (the maintenance controller deletes its own): done
    if (e instanceof k8s.ApiException && e.code === 404) return;
    throw e;
  }
}

/**
 * Waits, on one watch and one deadline for all (as `drain --wait` does),
 * until each deleted Eviction is gone, showing how many migrations still
 * settle; then says what its finalizer did with the compute service. An
 * Eviction created again under the name (a new uid) ends its wait with an
 * error.
 */
async function waitGone(
  kc: k8s.KubeConfig,
  api: k8s.CustomObjectsApi,
  deleted: readonly Eviction[],
  io: CancelIo,
  timeoutMs: number,
): Promise<number> {
  const uids = new Map(
    deleted.map((e) => [e.metadata?.name ?? "", e.metadata?.uid]),
  );
  const inFlight = new Map<string, number>();
  // one Eviction on a terminal: its line is rewritten in place
  const progress = new ProgressLines(io.err, io.interactive && uids.size === 1);
  let code = 0;
  let said = Promise.resolve();
  const stop = new AbortController();
  const end = (name: string) => {
    uids.delete(name);
    if (uids.size === 0) stop.abort();
  };
  const gone = (name: string) => {
    const uid = uids.get(name);
    const first = progress.end;
    end(name);
    said = said.then(async () =>
      io.out(
        `${first}${evictionRef(name)} gone: ${await serviceOutcome(kc, uid)}`,
      )
    );
  };
  const onChange = ({ type, object }: EvictionChange) => {
    const name = (object["metadata"] as { name?: string } | undefined)?.name ??
      "";
    if (!uids.has(name)) return;
    if (type === "DELETED") return gone(name);
    const now = EvictionSchema.safeParse(object);
    if (!now.success) return;
    if (now.data.metadata?.uid !== uids.get(name)) {
      io.err(`${progress.end}${waitLine("recreated", now.data)}`);
      code = 1;
      return end(name);
    }
    inFlight.set(name, now.data.status?.inFlightCount ?? 0);
    progress.show(name, waitLine("cancelling", now.data));
  };
  // gone before the watch began: the first list lacks them
  let listed = false;
  const onListed = (names: ReadonlySet<string>) => {
    if (listed) return;
    listed = true;
    for (const name of [...uids.keys()]) if (!names.has(name)) gone(name);
  };
  const timedOut = uids.size > 0 &&
    await watchWithin(kc, api, onChange, stop, timeoutMs, onListed);
  await said;
  if (!timedOut || uids.size === 0) return code;
  const late = [...uids.keys()].map((name) =>
    waitLine("timedOut", {
      metadata: { name },
      spec: { hypervisor: name, reason: "" },
      status: { inFlightCount: inFlight.get(name) ?? 0 },
    }, timeoutMs)
  );
  io.err(`${progress.end}${late.join("\n")}`);
  return 1;
}

/**
 * What `cancel --wait` says of an Eviction it waits for: progress, created
 * again under its name, or still there when `timeoutMs` passed.
 *
 * @example
 * ```ts
 * import { waitLine } from "./cancel.ts";
 * const e = { metadata: { name: "n1" }, spec: { hypervisor: "n1", reason: "r" }, status: { inFlightCount: 2 } };
 * console.log(waitLine("cancelling", e)); // n1: cancelling: 2 migrations in flight settle first
 * ```
 */
export function waitLine(
  what: "cancelling" | "recreated" | "timedOut",
  e: Eviction,
  timeoutMs = 0,
): string {
  const name = e.metadata?.name ?? "";
  const n = e.status?.inFlightCount ?? 0;
  const host = e.spec.hypervisor;
  switch (what) {
    case "cancelling":
      return `${name}: cancelling: ${n} migrations in flight ${
        n === 0 ? "(re-enabling the compute service)" : "settle first"
      }`;
    case "recreated":
      return `error: ${
        evictionRef(name)
      } was created again (someone or the maintenance controller drains ${host} anew): see kubectl get hypervisor ${host}`;
    case "timedOut":
      return `error: timed out waiting for the deletion of ${
        evictionRef(name)
      } after ${
        timeoutMs / 1000
      } s: ${n} migrations in flight (the cancel goes on)`;
  }
}

const timeOf = (t: Date | string | undefined) =>
  t === undefined ? 0 : new Date(t).getTime();

const SERVICE_REASONS = new Set([
  "HypervisorReEnabled",
  "HypervisorLeftDisabled",
]);

/**
 * What the finalizer did with the compute service, from its Event on the
 * Eviction (`uid`); a plain sentence when there is none to read.
 */
async function serviceOutcome(
  kc: k8s.KubeConfig,
  uid: string | undefined,
): Promise<string> {
  const plain =
    "the finalizer has handled the compute service (kubectl get events --field-selector involvedObject.kind=Eviction says how)";
  if (uid === undefined) return plain;
  try {
    const core = kc.makeApiClient(k8s.CoreV1Api);
    const list = await core.listNamespacedEvent({
      namespace: "default",
      fieldSelector: `involvedObject.uid=${uid}`,
    });
    const said = list.items
      .filter((ev) => SERVICE_REASONS.has(ev.reason ?? ""))
      .sort((a, b) => timeOf(a.lastTimestamp) - timeOf(b.lastTimestamp))
      .at(-1);
    return said?.message ??
      "its finalizer left no Event about the compute service: the drain had not disabled it";
  } catch {
    return plain;
  }
}
