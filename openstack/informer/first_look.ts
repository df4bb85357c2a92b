/**
 * The first look after a start: a start can fail within a second
 * (NoValidHost), so it is looked at a poll interval after it was issued.
 * @module
 */

import { migrationPhase } from "./nova_states.ts";

/** Share of a poll interval after a start from which a look counts as its first. */
export const FIRST_LOOK_SHARE = 0.75;

/** Poll intervals after a start in which it is looked at each poll, until past the conductor. */
export const FIRST_LOOK_WINDOW = 3;

/**
 * When to look next at a start of ours for how it began; undefined once the
 * model times it (`withConductor`: on a loaded cloud, deciding takes polls).
 *
 * @example
 * ```ts
 * import { firstLookAt } from "./first_look.ts";
 * console.log(firstLookAt(10_000, undefined, 2000, false)); // 12000
 * console.log(firstLookAt(10_000, 10_400, 2000, false)); // 12000: too soon to count
 * console.log(firstLookAt(10_000, 12_000, 2000, true)); // undefined: it copies
 * console.log(firstLookAt(10_000, 12_000, 2000, false)); // 14000: still with the conductor
 * console.log(firstLookAt(10_000, 16_000, 2000, false)); // undefined: the window is over
 * console.log(firstLookAt(10_000, 30_000, 2000, false, true)); // 32000: the conductor still decides
 * ```
 */
export function firstLookAt(
  issuedAtMs: number,
  lastLookMs: number | undefined,
  pollMs: number,
  pastConductor: boolean,
  withConductor = false,
): number | undefined {
  if (pastConductor) return undefined;
  if (
    lastLookMs === undefined ||
    lastLookMs - issuedAtMs < pollMs * FIRST_LOOK_SHARE
  ) return issuedAtMs + pollMs;
  if (
    !withConductor && lastLookMs - issuedAtMs >= pollMs * FIRST_LOOK_WINDOW
  ) return undefined;
  return lastLookMs + pollMs;
}

/**
 * A start past Nova's conductor: no fast failure is to come.
 *
 * @example
 * ```ts
 * import { pastConductor } from "./first_look.ts";
 * console.log(pastConductor("accepted"), pastConductor("queued"), pastConductor("error")); // false true false
 * ```
 */
export function pastConductor(status: string | undefined): boolean {
  if (status === undefined) return false;
  const phase = migrationPhase(status);
  if (phase === "done") return true;
  return phase === "in_progress" && status.toLowerCase() !== "accepted";
}

/**
 * Whether a glance shows nothing to act on (all in progress, ours listed).
 *
 * @example
 * ```ts
 * import { glanceIsQuiet } from "./first_look.ts";
 * const ours = () => true;
 * console.log(glanceIsQuiet(["a"], ours, () => "running")); // true
 * console.log(glanceIsQuiet(["a"], ours, () => "error")); // false
 * console.log(glanceIsQuiet(["a"], ours, () => undefined)); // false
 * ```
 */
export function glanceIsQuiet(
  inFlight: readonly string[],
  issuedByUs: (id: string) => boolean,
  statusOf: (id: string) => string | undefined,
): boolean {
  return inFlight.every((id) => {
    const status = statusOf(id);
    if (status === undefined) return !issuedByUs(id);
    return migrationPhase(status) === "in_progress";
  });
}
