/**
 * Validation of the EvictionPolicy (pure): the name, the limit settings
 * (through `checkLimitSpec`, shared with the start-up flags), and warnings
 * for a change that lowers the limits of running drains.
 *
 * On UPDATE, a violation that the old object had already (same message)
 * does not refuse the update (it is reported as a warning instead), so a
 * policy created before the webhook existed can still be edited and fixed.
 * An object being deleted is always allowed.
 *
 * @module
 */

import {
  type LimitSettings,
  POLICY_NAME,
  policySettings,
  resolveLimit,
} from "../limits/resolve.ts";
import {
  checkLimitSpec,
  isRecord,
  violationMessage,
} from "../limits/validation.ts";
import { isBeingDeleted, nameList, objectName } from "./object_fields.ts";
import { type AdmissionResult, allow, deny } from "../framework/admission.ts";

/** A drain that is running now, as the policy webhook needs to know it. */
export interface RunningEviction {
  /** The Eviction's name. */
  readonly name: string;
  /** The Hypervisor it drains. */
  readonly hypervisor: string;
  /** The Hypervisor's traits (status.traits); empty when unknown. */
  readonly traits: readonly string[];
  /** The limit the drain has now (status.effectiveLimit). */
  readonly effectiveLimit: number;
  /** The Eviction's own spec.maxConcurrentMigrations, if any. */
  readonly maxConcurrentMigrations?: number | undefined;
}

/** What {@linkcode validateEvictionPolicy} needs from the cluster. */
export interface PolicyContext {
  /** The Evictions that are draining now (not finished). */
  readonly runningEvictions: readonly RunningEviction[];
}

function isLimit(v: unknown): v is number {
  return typeof v === "number" && Number.isSafeInteger(v) && v >= 1;
}

function refusals(obj: Record<string, unknown>): string[] {
  const messages: string[] = [];
  const name = objectName(obj);
  if (name !== POLICY_NAME) {
    messages.push(
      violationMessage(
        "metadata.name",
        name,
        "",
        `"${POLICY_NAME}", because there is one EvictionPolicy per cluster`,
      ),
    );
  }
  const check = checkLimitSpec(obj["spec"]);
  if (!check.ok) messages.push(...check.violations.map((v) => v.message));
  return messages;
}

function loweringWarnings(
  settings: LimitSettings,
  oldObj: unknown,
  context: PolicyContext,
): string[] {
  const warnings: string[] = [];
  const lowered: string[] = [];
  for (const e of context.runningEvictions) {
    if (!isLimit(e.effectiveLimit)) continue;
    const requested = isLimit(e.maxConcurrentMigrations)
      ? e.maxConcurrentMigrations
      : undefined;
    const next = resolveLimit(settings, e.traits, requested).limit;
    if (next < e.effectiveLimit) {
      lowered.push(`${nameList([e.name])} from ${e.effectiveLimit} to ${next}`);
    }
  }
  if (lowered.length > 0) {
    const shown = lowered.slice(0, 5).join(", ");
    const more = lowered.length > 5 ? ` and ${lowered.length - 5} more` : "";
    warnings.push(
      `spec: lowers the limit of ${lowered.length} running drain${
        lowered.length === 1 ? "" : "s"
      }: Eviction ${shown}${more}; they start no new migrations until fewer than the new limit are in flight`,
    );
  }
  const budget = settings.spec.clusterMaxConcurrentMigrations;
  const oldSpec = isRecord(oldObj) ? oldObj["spec"] : undefined;
  const oldRaw = isRecord(oldSpec)
    ? oldSpec["clusterMaxConcurrentMigrations"]
    : undefined;
  const oldBudget = isLimit(oldRaw) ? oldRaw : undefined;
  const running = context.runningEvictions.map((e) => e.name);
  if (
    budget !== undefined && running.length > 0 &&
    (oldBudget === undefined || budget < oldBudget)
  ) {
    warnings.push(
      `spec.clusterMaxConcurrentMigrations: lowered to ${budget} (from ${
        oldBudget ?? "no budget"
      }) while ${running.length} drain${
        running.length === 1 ? " is" : "s are"
      } running (Eviction ${
        nameList(running)
      }); new migrations wait until fewer than ${budget} are in flight across the cluster`,
    );
  }
  return warnings;
}

/**
 * Validates an EvictionPolicy on CREATE (`oldObj` undefined) or UPDATE.
 * Denies: a name other than `default`; a spec that `checkLimitSpec`
 * refuses (trait syntax, duplicate traits also differing only in case, a
 * trait limit above the default, types and bounds). Warns: everything
 * `checkLimitSpec` warns about, and a change that lowers the limit of
 * running drains (naming them) or the cluster budget while drains run.
 * Several refusals are joined with ` | ` into one line.
 *
 * @example
 * ```ts
 * import { validateEvictionPolicy } from "./eviction_policy.ts";
 * const v = validateEvictionPolicy(
 *   { metadata: { name: "default" }, spec: { maxConcurrentMigrations: 4,
 *     traitLimits: [{ trait: "CUSTOM_A", maxConcurrentMigrations: 8 }] } },
 *   undefined,
 *   { runningEvictions: [] },
 * );
 * console.assert(!v.allowed);
 * ```
 */
export function validateEvictionPolicy(
  newObj: unknown,
  oldObj: unknown,
  context: PolicyContext,
): AdmissionResult {
  if (!isRecord(newObj)) {
    return deny(
      violationMessage("object", newObj, "", "an EvictionPolicy object"),
    );
  }
  if (isBeingDeleted(newObj)) return allow();
  const check = checkLimitSpec(newObj["spec"]);
  const warnings = check.warnings.map((w) => w.message);
  let messages = refusals(newObj);
  if (oldObj !== undefined && isRecord(oldObj)) {
    const before = new Set(refusals(oldObj));
    for (const m of messages) {
      if (before.has(m)) {
        warnings.push(`${m} (already so before this update, so not refused)`);
      }
    }
    messages = messages.filter((m) => !before.has(m));
  }
  if (messages.length > 0) return deny(messages.join(" | "), { warnings });
  if (check.ok) {
    warnings.push(
      ...loweringWarnings(policySettings(check.spec), oldObj, context),
    );
  }
  return allow(warnings);
}
