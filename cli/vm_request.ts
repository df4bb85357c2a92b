/**
 * `kubectl evictor force-complete HOST VM` and `kubectl evictor abort HOST
 * VM`: a person's request for a live copy in flight, appended to the
 * Eviction's `spec.actions` with who asked (the API server's own answer to
 * a SelfSubjectReview, which the webhook checks) and when; the controller
 * acts on it and records the outcome in `status.actions` and an Event.
 *
 * @module
 */
import * as k8s from "@kubernetes/client-node";
import { z } from "zod";
import {
  type Eviction,
  EvictionResource,
  EvictionSchema,
  type EvictionSpecActionsItem,
} from "../models/mod.ts";
import {
  answers,
  type RequestedAction,
} from "../controllers/eviction/requests.ts";
import { customObjectsApi, type KubeTarget, pluginApi } from "./kube_config.ts";
import { apiMessage } from "./error_line.ts";
import { type EvictionChange, watchWithin } from "./eviction_watch.ts";
import {
  type CommandName,
  parseCommand,
  timeoutFlag,
  UsageError,
  usageOf,
} from "./usage.ts";

const { group, version, plural } = EvictionResource;

/** Where the command writes (the plugin's io fits it). */
export interface VmRequestIo {
  kubeConfig: (target: KubeTarget) => Promise<k8s.KubeConfig>;
  /** What was requested (and, with --wait, its outcome). */
  out: (line: string) => void;
  /** Notes, warnings and `error:` lines. */
  err: (line: string) => void;
}

/** The commands and the action each appends. */
export const REQUEST_COMMANDS: Readonly<
  Record<"force-complete" | "abort", RequestedAction>
> = {
  "force-complete": "ForceComplete",
  abort: "Abort",
};

/** What each action does to the VM: said on stderr before it is sent. */
export const ACTION_WARNINGS: Readonly<Record<RequestedAction, string>> = {
  ForceComplete:
    "force-complete pauses the VM until its copy completes unless Nova permits post-copy (live_migration_permit_post_copy), which switches it to post-copy instead; Nova accepts it once per migration",
  Abort:
    "abort stops the copy: the VM stays on its host, keeps running, and is migrated again later in the drain",
};

/** The request to append, or why not. */
export type RequestDecision =
  | {
    ok: true;
    /** The Eviction's name. */
    eviction: string;
    item: EvictionSpecActionsItem;
    /** The JSON patch: the list as seen is tested, so a concurrent request is never overwritten. */
    patch: JsonPatchOp[];
    /** Notes for stderr (e.g. a VM named, not an id). */
    notes: string[];
  }
  | { ok: false; error: string };

/** One operation of a JSON patch (RFC 6902). */
export interface JsonPatchOp {
  op: "test" | "add";
  path: string;
  value: unknown;
}

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

/**
 * The Eviction that drains `host`: the unfinished one whose spec.hypervisor
 * it is, else one of that name (as cancel finds them), else a finished one.
 *
 * @example
 * ```ts
 * import { evictionFor } from "./vm_request.ts";
 * const e = { metadata: { name: "n1" }, spec: { hypervisor: "n1", reason: "r" } };
 * console.assert(evictionFor([e], "n1") === e);
 * ```
 */
export function evictionFor(
  evictions: readonly Eviction[],
  host: string,
): Eviction | undefined {
  const mine = evictions.filter((e) =>
    e.spec.hypervisor === host || e.metadata?.name === host
  );
  const running = (e: Eviction) => e.status?.finishedAt === undefined;
  return mine.find((e) => running(e) && e.spec.hypervisor === host) ??
    mine.find(running) ?? mine[0];
}

/**
 * The JSON patch that appends `item` to `current` (the list as read):
 * it first tests that the list is still exactly that (absent: `null`,
 * which the API server's JSON patch takes for a missing member), so of
 * two requests made at once one fails instead of replacing the other.
 *
 * @example
 * ```ts
 * import { appendPatch } from "./vm_request.ts";
 * const item = { server: "vm", action: "Abort" as const, requestedBy: "a", requestedAt: "2026-01-01T00:00:00Z" };
 * console.log(appendPatch(undefined, item)[1]?.path); // /spec/actions
 * console.log(appendPatch([item], item)[1]?.path); // /spec/actions/-
 * ```
 */
export function appendPatch(
  current: readonly EvictionSpecActionsItem[] | undefined,
  item: EvictionSpecActionsItem,
): JsonPatchOp[] {
  return current === undefined
    ? [
      { op: "test", path: "/spec/actions", value: null },
      { op: "add", path: "/spec/actions", value: [item] },
    ]
    : [
      { op: "test", path: "/spec/actions", value: current },
      { op: "add", path: "/spec/actions/-", value: item },
    ];
}

/**
 * Decides the request of `user` at `nowIso` for `vm` on `host` against
 * the Eviction (pure). Refused: no Eviction drains the host; its drain
 * finished; a VM given by id that is not in its status.inFlight, or one
 * in flight by a cold migration (Nova can neither force-complete nor
 * abort a resize). A VM given by a name (not a UUID) is sent unchecked,
 * with a note: status.inFlight names VMs by id, and the controller
 * matches the name against the host's VMs.
 *
 * @example
 * ```ts
 * import { decideRequest } from "./vm_request.ts";
 * const e = { metadata: { name: "n1" }, spec: { hypervisor: "n1", reason: "r" } };
 * const d = decideRequest(e, "n1", "vm-a", "Abort", "alice", "2026-01-01T00:00:00Z");
 * console.assert(d.ok && d.notes.length === 1);
 * ```
 */
export function decideRequest(
  eviction: Eviction | undefined,
  host: string,
  vm: string,
  action: RequestedAction,
  user: string,
  nowIso: string,
): RequestDecision {
  if (eviction === undefined) {
    return {
      ok: false,
      error:
        `no Eviction drains ${host}: nothing is in flight there (kubectl evictor status lists the drains)`,
    };
  }
  const name = eviction.metadata?.name ?? host;
  const finishedAt = eviction.status?.finishedAt;
  if (finishedAt !== undefined) {
    return {
      ok: false,
      error:
        `the drain of ${host} (eviction.${group}/${name}) finished at ${finishedAt}: nothing is in flight to force-complete or abort`,
    };
  }
  const inFlight = eviction.status?.inFlight ?? [];
  const copy = inFlight.find((f) => f.id === vm);
  const notes: string[] = [];
  if (copy === undefined && UUID.test(vm)) {
    const live = inFlight.filter((f) => f.kind === "live").map((f) => f.id);
    return {
      ok: false,
      error: `VM ${vm} is not in flight on ${host} (${
        live.length === 0
          ? "no live migration is"
          : `live migrations in flight: ${live.join(", ")}`
      }): nothing sent; kubectl evictor status ${name} -o wide shows the copies`,
    };
  }
  if (copy?.kind === "cold") {
    return {
      ok: false,
      error:
        `VM ${vm} is moved by a cold migration (a resize): Nova can neither force-complete nor abort it; nothing sent`,
    };
  }
  if (copy === undefined) {
    notes.push(
      `note: "${vm}" is not a server id, so it is not checked against status.inFlight (which lists ids): the controller matches it against the names of ${host}'s VMs and records NotInFlight if none is in flight`,
    );
  }
  const item: EvictionSpecActionsItem = {
    server: vm,
    action,
    requestedBy: user,
    requestedAt: nowIso,
  };
  return {
    ok: true,
    eviction: name,
    item,
    patch: appendPatch(eviction.spec.actions, item),
    notes,
  };
}

/**
 * The line that says what was requested (kubectl's "NAME patched", with
 * " (server dry run)" when nothing changed).
 *
 * @example
 * ```ts
 * import { requestLine } from "./vm_request.ts";
 * const item = { server: "vm", action: "Abort" as const, requestedBy: "alice", requestedAt: "2026-01-01T00:00:00Z" };
 * console.log(requestLine("n1", 0, item, true));
 * // eviction.kvm.cloud.sap/n1 patched (server dry run): spec.actions[0] Abort of vm requested by alice at 2026-01-01T00:00:00Z
 * ```
 */
export function requestLine(
  eviction: string,
  index: number,
  item: EvictionSpecActionsItem,
  dryRun: boolean,
): string {
  return `eviction.${group}/${eviction} patched${
    dryRun ? " (server dry run)" : ""
  }: spec.actions[${index}] ${item.action} of ${item.server} requested by ${item.requestedBy} at ${item.requestedAt}`;
}

/** An outcome of status.actions as the plugin reads it (the boundary). */
const OutcomeSchema = z.object({
  server: z.string(),
  action: z.string(),
  requestedBy: z.string(),
  requestedAt: z.string().optional(),
  outcome: z.string(),
  message: z.string().optional(),
  at: z.string().optional(),
});

/** A recorded outcome. */
export type RequestOutcomeSeen = z.infer<typeof OutcomeSchema>;

/**
 * The outcome of the request at `index` in the raw Eviction `object`, if
 * recorded: the outcome at the same index when it answers it, else the
 * last one that does.
 *
 * @example
 * ```ts
 * import { outcomeOf } from "./vm_request.ts";
 * const item = { server: "vm", action: "Abort" as const, requestedBy: "a", requestedAt: "2026-01-01T00:00:00Z" };
 * const o = outcomeOf({ status: { actions: [{ ...item, outcome: "Sent", message: "ok" }] } }, item, 0);
 * console.assert(o?.outcome === "Sent");
 * ```
 */
export function outcomeOf(
  object: Record<string, unknown>,
  item: EvictionSpecActionsItem,
  index: number,
): RequestOutcomeSeen | undefined {
  const status = object["status"] as { actions?: unknown } | undefined;
  const raw = Array.isArray(status?.actions) ? status.actions : [];
  const seen = raw.flatMap((o) => {
    const p = OutcomeSchema.safeParse(o);
    return p.success ? [p.data] : [];
  });
  const same = seen.length === raw.length ? seen[index] : undefined;
  if (same !== undefined && answers(same, item)) return same;
  return seen.findLast((o) => answers(o, item));
}

/**
 * Runs `force-complete` or `abort` with its arguments (after the command
 * word); returns the exit code: 0 requested (with --wait: the controller
 * sent it to Nova), 1 refused, an error, another outcome, or --timeout
 * passed. A usage mistake throws a UsageError.
 *
 * @example
 * ```ts ignore
 * const code = await runVmRequest("abort", ["node042", vmId, "--wait"], io, warn);
 * ```
 */
export async function runVmRequest(
  command: "force-complete" | "abort",
  args: string[],
  io: VmRequestIo,
  warn: (text: string) => void,
): Promise<number> {
  const { values, positionals } = parseCommand(command, args, {
    "dry-run": { type: "boolean", default: false },
    wait: { type: "boolean", default: false },
    timeout: { type: "string", default: "0" },
  });
  if (values.help === true) {
    io.out(usageOf(command));
    return 0;
  }
  const [host, vm] = checkedArgs(command, positionals);
  const timeoutMs = timeoutFlag(command, values.timeout);
  const dryRun = values["dry-run"];
  const kc = await io.kubeConfig({
    kubeconfig: values.kubeconfig,
    context: values.context,
  });
  const api = customObjectsApi(kc, warn);
  const user = await whoAmI(kc, warn);
  const action = REQUEST_COMMANDS[command];
  // the list may change between the read and the patch (another request):
  // read again and retry, a few times
  for (let attempt = 1;; attempt++) {
    const d = decideRequest(
      evictionFor(await listEvictions(api), host),
      host,
      vm,
      action,
      user,
      new Date().toISOString(),
    );
    if (!d.ok) {
      io.err(`error: ${d.error}`);
      return 1;
    }
    if (attempt === 1) {
      for (const n of d.notes) io.err(n);
      warn(ACTION_WARNINGS[action]);
    }
    const index = d.patch[0]?.value === null
      ? 0
      : (d.patch[0]?.value as unknown[]).length;
    try {
      await api.patchClusterCustomObject(
        {
          group,
          version,
          plural,
          name: d.eviction,
          body: d.patch,
          ...(dryRun ? { dryRun: "All" } : {}),
        },
        k8s.setHeaderOptions("Content-Type", k8s.PatchStrategy.JsonPatch),
      );
    } catch (e) {
      if (!isTestFailure(e)) throw e;
      if (attempt < 3) continue;
      io.err(
        `error: spec.actions of eviction.${group}/${d.eviction} changed under each of 3 tries (other requests at the same time): nothing sent; try again`,
      );
      return 1;
    }
    io.out(requestLine(d.eviction, index, d.item, dryRun));
    if (dryRun || !values.wait) return 0;
    return await waitOutcome(kc, api, d.eviction, d.item, index, timeoutMs, io);
  }
}

function checkedArgs(
  command: CommandName,
  positionals: readonly string[],
): [string, string] {
  const [host, vm, ...rest] = positionals;
  if (host === undefined || vm === undefined || rest.length > 0) {
    throw new UsageError(
      `${command} takes a HOST and a VM, got ${positionals.length} arguments`,
      command,
    );
  }
  if (!/^[a-z0-9]([-a-z0-9.]*[a-z0-9])?$/.test(host)) {
    throw new UsageError(
      `HOST "${host}" is not valid: expected a Kubernetes object name (lower case letters, digits, "-" and ".")`,
      command,
    );
  }
  if (vm.trim() === "" || vm.length > 255) {
    throw new UsageError(
      `VM "${vm}" is not valid: expected a Nova server id or name of 1 to 255 characters`,
      command,
    );
  }
  return [host, vm];
}

/**
 * A JSON patch that did not apply: its test failed, the list changed since
 * it was read. The API server says only this (a schema or webhook refusal
 * names the field).
 */
function isTestFailure(e: unknown): boolean {
  return e instanceof k8s.ApiException && e.code === 422 &&
    apiMessage(e).startsWith(
      "the server rejected our request due to an error in our request",
    );
}

async function listEvictions(api: k8s.CustomObjectsApi): Promise<Eviction[]> {
  const list = await api.listClusterCustomObject({
    group,
    version,
    plural,
  }) as { items?: unknown[] };
  return (list.items ?? []).flatMap((item) => {
    const parsed = EvictionSchema.safeParse(item);
    return parsed.success ? [parsed.data] : [];
  });
}

/** The user the API server sees (what `kubectl auth whoami` asks). */
async function whoAmI(
  kc: k8s.KubeConfig,
  warn: (text: string) => void,
): Promise<string> {
  const auth = pluginApi(kc, warn, k8s.AuthenticationV1Api);
  let username: string | undefined;
  try {
    const review = await auth.createSelfSubjectReview({
      body: {
        apiVersion: "authentication.k8s.io/v1",
        kind: "SelfSubjectReview",
      },
    });
    username = review.status?.userInfo?.username;
  } catch (e) {
    if (!(e instanceof k8s.ApiException)) throw e;
    throw new Error(
      `cannot learn who you are from the API server (a SelfSubjectReview, as kubectl auth whoami): ${
        apiMessage(e)
      }; a request must name who made it`,
    );
  }
  if (username === undefined || username === "") {
    throw new Error(
      "the API server's SelfSubjectReview names no user: a request must name who made it",
    );
  }
  return username;
}

/**
 * What one change of the Eviction ends a `--wait` with, if anything: the
 * request's outcome (exit 0 when Sent, else 1 with an `error:` line), or
 * the Eviction deleted or finished (no pass looks at a finished drain's
 * requests) before an outcome.
 *
 * @example
 * ```ts
 * import { waitVerdict } from "./vm_request.ts";
 * const item = { server: "vm", action: "Abort" as const, requestedBy: "a", requestedAt: "2026-01-01T00:00:00Z" };
 * const v = waitVerdict("MODIFIED", { status: { actions: [{ ...item, outcome: "Sent", message: "ok" }] } }, item, 0);
 * console.log(v?.line); // Abort of vm: Sent: ok
 * ```
 */
export function waitVerdict(
  type: EvictionChange["type"],
  object: Record<string, unknown>,
  item: EvictionSpecActionsItem,
  index: number,
): { code: number; line: string } | undefined {
  const name = (object["metadata"] as { name?: string } | undefined)?.name ??
    "";
  if (type === "DELETED") {
    return {
      code: 1,
      line:
        `error: eviction.${group}/${name} was deleted before the request was answered`,
    };
  }
  const o = outcomeOf(object, item, index);
  if (o !== undefined) {
    const said = `${item.action} of ${item.server}: ${o.outcome}${
      o.message ? `: ${o.message}` : ""
    }`;
    return o.outcome === "Sent"
      ? { code: 0, line: said }
      : { code: 1, line: `error: ${said}` };
  }
  const finishedAt = (object["status"] as { finishedAt?: unknown } | undefined)
    ?.finishedAt;
  if (typeof finishedAt !== "string") return undefined;
  return {
    code: 1,
    line:
      `error: the drain of eviction.${group}/${name} finished at ${finishedAt} before the request was answered`,
  };
}

/**
 * Waits until the controller records the request's outcome: 0 when Sent,
 * 1 for NotInFlight or Refused (the message says why), a deleted
 * Eviction, or `timeoutMs` passed.
 */
async function waitOutcome(
  kc: k8s.KubeConfig,
  api: k8s.CustomObjectsApi,
  eviction: string,
  item: EvictionSpecActionsItem,
  index: number,
  timeoutMs: number,
  io: VmRequestIo,
): Promise<number> {
  const stop = new AbortController();
  let code: number | undefined;
  const onChange = ({ type, object }: EvictionChange) => {
    const name = (object["metadata"] as { name?: string } | undefined)?.name;
    if (name !== eviction || code !== undefined) return;
    const v = waitVerdict(type, object, item, index);
    if (v === undefined) return;
    (v.code === 0 ? io.out : io.err)(v.line);
    code = v.code;
    stop.abort();
  };
  const onListed = (names: ReadonlySet<string>) => {
    if (!names.has(eviction)) {
      onChange({ type: "DELETED", object: { metadata: { name: eviction } } });
    }
  };
  const timedOut = await watchWithin(
    kc,
    api,
    onChange,
    stop,
    timeoutMs,
    onListed,
  );
  if (code !== undefined) return code;
  if (timedOut) {
    io.err(
      `error: timed out after ${
        timeoutMs / 1000
      } s waiting for the outcome of ${item.action} of ${item.server} (the request stands; kubectl get eviction ${eviction} -o jsonpath='{.status.actions}' shows it later)`,
    );
  }
  return 1;
}
