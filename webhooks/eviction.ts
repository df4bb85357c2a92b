/**
 * Validation of the Eviction (pure): one unfinished Eviction per
 * hypervisor, a reason that is not only whitespace, and warnings for a
 * hypervisor without a Hypervisor object and for a
 * `spec.maxConcurrentMigrations` above what the settings allow the host.
 *
 * On UPDATE only what changed can be refused (the one-per-hypervisor rule
 * is checked on CREATE only, the reason only when it changed), so an
 * existing Eviction can always get its finalizer removed; an object being
 * deleted is always allowed. The controller must still cope with two
 * Evictions for one host that were created concurrently.
 *
 * @module
 */

import { EvictionSpecSchema } from "../models/mod.ts";
import {
  drainConvergence,
  type LimitSettings,
  resolveLimit,
} from "../limits/resolve.ts";
import { quoteValue } from "../limits/quote.ts";
import {
  checkEvictionConvergence,
  isRecord,
  MAX_PER_HOST_LIMIT,
  violationMessage,
} from "../limits/validation.ts";
import { noPauseEvictionWarning } from "../limits/convergence_validation.ts";
import { isBeingDeleted, objectName } from "./object_fields.ts";
import { type AdmissionResult, allow, deny } from "../framework/admission.ts";

/** An Eviction that exists, as the Eviction webhook needs to know it. */
export interface ExistingEviction {
  /** Its name. */
  readonly name: string;
  /** spec.hypervisor. */
  readonly hypervisor: string;
  /** Whether its drain has finished (status.finishedAt) and it is not being deleted. */
  readonly finished: boolean;
  /** Whether it is being deleted (its finalizer has not run yet). */
  readonly deleting?: boolean | undefined;
}

/** What {@linkcode validateEviction} needs from the cluster. */
export interface EvictionContext {
  /** The Evictions that exist. */
  readonly evictions: readonly ExistingEviction[];
  /** The traits (status.traits) of the Hypervisor with that name; undefined when there is no such object. */
  readonly hypervisorTraits: (name: string) => readonly string[] | undefined;
  /** The limit settings in force (policy, or flags without one). */
  readonly settings: LimitSettings;
  /** The EvictionPolicy's spec.capacityCheck (absent means Warn). */
  readonly capacityCheck?: "Warn" | "Hold" | undefined;
}

/** The warning at creation of an Eviction while the policy says Hold. */
export const HOLD_WARNING =
  "the EvictionPolicy's capacityCheck is Hold: if Placement finds no target for some of the host's VMs, the drain waits (compute service enabled, no migration) until they fit; see the CapacityChecked condition";

const MAX_NAME = 255;

function isIntIn(v: unknown, min: number, max: number): v is number {
  return typeof v === "number" && Number.isSafeInteger(v) && v >= min &&
    v <= max;
}

function oldReason(oldObj: unknown): unknown {
  if (!isRecord(oldObj)) return undefined;
  const spec = oldObj["spec"];
  return isRecord(spec) ? spec["reason"] : undefined;
}

function convergenceChanged(
  spec: Record<string, unknown>,
  oldObj: unknown,
): boolean {
  if (oldObj === undefined) return true;
  const old = isRecord(oldObj) ? oldObj["spec"] : undefined;
  return JSON.stringify(spec["convergence"]) !==
    JSON.stringify(isRecord(old) ? old["convergence"] : undefined);
}

function clampWarning(
  requested: number,
  hypervisor: string,
  traits: readonly string[] | undefined,
  settings: LimitSettings,
): string | undefined {
  const r = resolveLimit(settings, traits ?? [], requested);
  if (!r.clamped) return undefined;
  const giver = settings.source === "policy"
    ? "the EvictionPolicy gives"
    : "the start-up flags give";
  const why = r.decidingTrait !== undefined
    ? `trait ${r.decidingTrait}`
    : traits === undefined
    ? "the default; the host's traits are unknown"
    : "the default";
  return `spec.maxConcurrentMigrations: ${requested} is above the limit ${r.hostLimit} that ${giver} hypervisor ${
    quoteValue(hypervisor)
  } (${why}), so it is clamped to ${r.hostLimit}`;
}

/**
 * Validates an Eviction on CREATE (`oldObj` undefined) or UPDATE.
 * Denies: a second Eviction for a hypervisor that has an unfinished one
 * (naming it; CREATE only); a reason that is only whitespace; a
 * `spec.convergence` the policy's rules refuse (on UPDATE only when it
 * changed); a spec the CRD schema refuses. Warns: no Hypervisor object of
 * that name; `spec.maxConcurrentMigrations` above the limit the settings
 * give the host (it is clamped, and the warning says to what); a new or
 * changed `spec.convergence` that is risky (ForceComplete, above all on a
 * host with a trait of the policy's noPauseTraits; a per-GiB bound above
 * Nova's); on CREATE, a policy
 * whose capacityCheck is Hold (the drain may wait). Several refusals are
 * joined with ` | ` into one line.
 *
 * @example
 * ```ts
 * import { validateEviction } from "./eviction.ts";
 * import { policySettings } from "../limits/resolve.ts";
 * const v = validateEviction(
 *   { metadata: { name: "node042-b" }, spec: { hypervisor: "node042", reason: "kernel" } },
 *   undefined,
 *   {
 *     evictions: [{ name: "node042", hypervisor: "node042", finished: false }],
 *     hypervisorTraits: () => [],
 *     settings: policySettings({ maxConcurrentMigrations: 1, abortStuckMigrations: false }),
 *   },
 * );
 * console.assert(!v.allowed);
 * ```
 */
export function validateEviction(
  newObj: unknown,
  oldObj: unknown,
  context: EvictionContext,
): AdmissionResult {
  if (!isRecord(newObj)) {
    return deny(
      violationMessage("object", newObj, "", "an Eviction object"),
    );
  }
  if (isBeingDeleted(newObj)) return allow();
  const spec = newObj["spec"];
  if (!isRecord(spec)) {
    return deny(
      violationMessage(
        "spec",
        spec,
        "",
        "an object with hypervisor and reason",
      ),
    );
  }
  const messages: string[] = [];
  const hypervisor = spec["hypervisor"];
  const hypervisorOk = typeof hypervisor === "string" &&
    hypervisor.length >= 1 && hypervisor.length <= MAX_NAME;
  if (!hypervisorOk) {
    messages.push(
      violationMessage(
        "spec.hypervisor",
        hypervisor,
        "",
        `the name of a Hypervisor, 1 to ${MAX_NAME} characters`,
      ),
    );
  }
  const reason = spec["reason"];
  if (
    typeof reason !== "string" || reason.length < 1 ||
    reason.length > MAX_NAME
  ) {
    messages.push(
      violationMessage(
        "spec.reason",
        reason,
        "",
        `a reason of 1 to ${MAX_NAME} characters that says why the host is drained`,
      ),
    );
  } else if (
    reason.trim() === "" &&
    (oldObj === undefined || oldReason(oldObj) !== reason)
  ) {
    messages.push(
      violationMessage(
        "spec.reason",
        reason,
        "",
        "a reason that is not only whitespace (it becomes the compute service's disabled reason)",
      ),
    );
  }
  const requested = spec["maxConcurrentMigrations"];
  if (requested !== undefined && !isIntIn(requested, 1, MAX_PER_HOST_LIMIT)) {
    messages.push(
      violationMessage(
        "spec.maxConcurrentMigrations",
        requested,
        "",
        `an integer from 1 to ${MAX_PER_HOST_LIMIT}, which can only lower the limit`,
      ),
    );
  }
  // On UPDATE only a changed spec.convergence is checked (and warned
  // about): appending spec.actions must not repeat its warnings.
  const convergence = convergenceChanged(spec, oldObj)
    ? checkEvictionConvergence(spec["convergence"])
    : { violations: [], warnings: [] };
  messages.push(...convergence.violations.map((v) => v.message));
  if (messages.length === 0) {
    const parsed = EvictionSpecSchema.safeParse(spec);
    if (!parsed.success) {
      const issue = parsed.error.issues[0];
      const key = issue?.path[0];
      const field = typeof key === "string" ? `spec.${key}` : "spec";
      messages.push(
        violationMessage(
          field,
          typeof key === "string" ? spec[key] : spec,
          "",
          issue?.message ?? "a valid Eviction spec",
        ),
      );
    }
  }
  if (hypervisorOk && oldObj === undefined) {
    const name = objectName(newObj);
    const existing = context.evictions.find((e) =>
      e.hypervisor === hypervisor && !e.finished && e.name !== name
    );
    if (existing !== undefined) {
      const quoted = quoteValue(existing.name);
      const [held, advice] = existing.deleting === true
        ? [
          `the Eviction ${quoted} that is being deleted`,
          `wait until ${quoted} is gone`,
        ]
        : [
          `the unfinished Eviction ${quoted}`,
          `wait until ${quoted} is finished, or delete it`,
        ];
      messages.push(
        violationMessage(
          "spec.hypervisor",
          hypervisor,
          `, which already has ${held}`,
          `at most one unfinished Eviction per hypervisor (${advice})`,
        ),
      );
    }
  }
  const warnings = convergence.warnings.map((w) => w.message);
  if (hypervisorOk) {
    const traits = context.hypervisorTraits(hypervisor);
    if (traits === undefined) {
      warnings.push(
        `spec.hypervisor: no Hypervisor named ${
          quoteValue(hypervisor)
        } exists, so its traits and trait limits are unknown; check the name`,
      );
    }
    if (isIntIn(requested, 1, MAX_PER_HOST_LIMIT)) {
      const w = clampWarning(requested, hypervisor, traits, context.settings);
      if (w !== undefined) warnings.push(w);
    }
    if (
      convergence.violations.length === 0 && traits !== undefined &&
      convergenceChanged(spec, oldObj)
    ) {
      const own = isRecord(spec["convergence"]) ? spec["convergence"] : {};
      const w = noPauseEvictionWarning(
        drainConvergence(context.settings, traits, own),
        traits,
        context.settings.spec.noPauseTraits,
      );
      if (w !== undefined) warnings.push(w);
    }
  }
  if (oldObj === undefined && context.capacityCheck === "Hold") {
    warnings.push(HOLD_WARNING);
  }
  return messages.length > 0
    ? deny(messages.join(" | "), { warnings })
    : allow(warnings);
}
