/**
 * `kubectl evictor cancel HOST [HOST...] [--abort-in-flight]
 * [--clear-maintenance] [--dry-run] [--wait] [--timeout DURATION]`: undoes
 * a drain. Deleting the Eviction is the core of it: no pass runs on a
 * deleted Eviction, so no migration starts after the delete; its finalizer
 * lets the copies in flight finish (or, with `--abort-in-flight`, aborts
 * ours through the annotation `evictor.kvm.cloud.sap/abort-in-flight`,
 * set before the delete), then re-enables the compute service, unless the
 * Hypervisor is in maintenance or someone else disabled it
 * (controllers/eviction/finalize.ts), and lets the Eviction go.
 *
 * A drain that Hypervisor maintenance asked for (spec.maintenance manual,
 * auto or termination) comes back the moment its Eviction is gone: the
 * maintenance controller creates it again. Cancel refuses such a host and
 * says so, unless `--clear-maintenance` clears spec.maintenance first.
 * Every host is checked before anything changes.
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
import { customObjectsApi, type KubeTarget } from "./kube_config.ts";
import { parseCommand, timeoutFlag, UsageError, usageOf } from "./usage.ts";

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
  /** Waits between looks. */
  sleep: (ms: number) => Promise<void>;
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
 * What cancelling one host takes: annotate its Evictions (with
 * `--abort-in-flight`), clear the Hypervisor's maintenance (with
 * `--clear-maintenance`, when it asks for a drain), delete its Evictions.
 * Refused, with the reason and the way out, when there is no Eviction, or
 * when maintenance asks for the drain and `--clear-maintenance` is not
 * given (the Eviction would come back at once). Pure.
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
  const hosts = [...new Set(positionals)];
  if (hosts.length === 0) {
    throw new UsageError("cancel needs a HOST name", "cancel");
  }
  for (const h of hosts) {
    if (!/^[a-z0-9]([-a-z0-9.]*[a-z0-9])?$/.test(h) || h.length > 253) {
      throw new UsageError(
        `HOST "${h}" is not valid: expected a Kubernetes object name (lower case letters, digits, "-" and ".")`,
        "cancel",
      );
    }
  }
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
  const all = await listEvictions(api);
  // Every host first: a cancel refused for one host changes nothing.
  const decisions = await Promise.all(hosts.map(async (host) => {
    const evictions = all.filter((e) =>
      e.spec.hypervisor === host || e.metadata?.name === host
    );
    // HOST may name an Eviction of another host: that host's maintenance
    const drained = evictions.find((e) => e.spec.hypervisor === host) ??
      evictions[0];
    const target: CancelTarget = {
      host,
      evictions,
      hypervisor: await getHypervisor(api, drained?.spec.hypervisor ?? host),
    };
    return { target, decision: cancelPlan(target, options) };
  }));
  const refused = decisions.flatMap((d) =>
    d.decision.ok ? [] : [d.decision.error]
  );
  if (refused.length > 0) {
    for (const r of refused) io.err(`error: ${r}`);
    if (hosts.length > 1) io.err("note: nothing was changed");
    return 1;
  }
  const dryRun = values["dry-run"];
  const deleted: Eviction[] = [];
  for (const { target, decision } of decisions) {
    if (!decision.ok) continue;
    for (const step of decision.steps) {
      if (!dryRun) await apply(api, step);
      io.out(stepLine(step, options.abortInFlight, dryRun));
      if (step.kind === "delete") {
        const e = target.evictions.find((x) =>
          x.metadata?.name === step.eviction
        );
        if (e !== undefined) deleted.push(e);
      }
    }
  }
  if (dryRun || !values.wait) return 0;
  let code = 0;
  const started = Date.now();
  for (const e of deleted) {
    code = Math.max(
      code,
      await waitGone(api, kc, e, io, started, timeoutMs),
    );
  }
  return code;
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
 * Waits until the Eviction `e` is gone (its finalizer has handled the
 * compute service), showing how many migrations still settle; then says
 * what the finalizer did with the service, as its Event tells.
 */
async function waitGone(
  api: k8s.CustomObjectsApi,
  kc: k8s.KubeConfig,
  e: Eviction,
  io: CancelIo,
  started: number,
  timeoutMs: number,
): Promise<number> {
  const name = e.metadata?.name ?? "";
  const uid = e.metadata?.uid;
  let last = "";
  for (;;) {
    let now: Eviction | undefined;
    try {
      now = EvictionSchema.parse(
        await api.getClusterCustomObject({
          group,
          version,
          plural: EvictionResource.plural,
          name,
        }),
      );
    } catch (err) {
      if (!(err instanceof k8s.ApiException && err.code === 404)) throw err;
    }
    if (now !== undefined && now.metadata?.uid !== uid) {
      io.err(
        `error: ${
          evictionRef(name)
        } was created again (someone or the maintenance controller drains ${now.spec.hypervisor} anew): see kubectl get hypervisor ${now.spec.hypervisor}`,
      );
      return 1;
    }
    if (now === undefined) {
      if (io.interactive && last !== "") io.err("");
      io.out(`${evictionRef(name)} gone: ${await serviceOutcome(kc, uid)}`);
      return 0;
    }
    const inFlight = now.status?.inFlightCount ?? 0;
    const line = `${name}: cancelling: ${inFlight} migrations in flight ${
      inFlight === 0 ? "(re-enabling the compute service)" : "settle first"
    }`;
    if (line !== last) {
      io.err(io.interactive ? `\r${line}` : line);
      last = line;
    }
    if (timeoutMs > 0 && Date.now() - started > timeoutMs) {
      io.err(
        `${
          io.interactive ? "\n" : ""
        }error: timed out waiting for the deletion of ${
          evictionRef(name)
        } after ${
          timeoutMs / 1000
        } s: ${inFlight} migrations in flight (the cancel goes on)`,
      );
      return 1;
    }
    await io.sleep(1000);
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
