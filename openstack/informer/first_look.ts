/**
 * The first look after a start. Once the duration model can time a
 * migration, the next look is when it should finish: for a long copy that
 * is many seconds away, while a start can fail within a second (the
 * conductor's NoValidHost turns the record `error`), and its slot would
 * idle until that look. So a start is looked at a poll interval after it
 * was issued, and paced by the model from then on. That look costs Nova
 * calls a drain paced by its model did not spend before; when it is due
 * for first looks only, one list of the host's migrations stands in for
 * it ({@linkcode glanceIsQuiet}), and a full look follows only when that
 * list shows something to act on.
 *
 * @module
 */

import { migrationPhase } from "./nova_states.ts";

/**
 * Share of a poll interval after a start from which a look counts as the
 * start's first look (a timer may fire a little early; a pass woken by
 * something else soon after the start is too early to see the outcome).
 */
export const FIRST_LOOK_SHARE = 0.75;

/**
 * Poll intervals after a start within which it is looked at every poll
 * interval while no look has seen it past the conductor: Nova's conductor
 * may take longer than one poll interval to find no valid host. Past it,
 * the duration model times the start, unless its record is still
 * `accepted` or not written yet ({@linkcode firstLookAt}'s
 * `withConductor`); an earlier attempt's record the latest seen does not
 * hold it.
 */
export const FIRST_LOOK_WINDOW = 3;

/**
 * When to look next at a start of ours issued at `issuedAtMs` for how it
 * began: one poll interval after it, so that a fast failure (the
 * conductor's NoValidHost: a record `error` within a second or so) is
 * seen and its slot refilled within a poll interval or two, not when the
 * start would have finished copying; then a poll interval after each look
 * (`lastLookMs`, counted from {@linkcode FIRST_LOOK_SHARE} of a poll
 * interval after the start) while none saw it past the conductor
 * (`pastConductor`), within {@linkcode FIRST_LOOK_WINDOW} poll intervals,
 * and for as long as the last look found its record `accepted` or none
 * (`withConductor`: Nova's conductor still deciding or not yet writing the
 * record, which on a loaded cloud may take many poll intervals; a
 * NoValidHost must still be seen within a poll interval of its record's
 * error). Undefined once a look saw it past the conductor, or the window
 * is over with an earlier attempt's record the latest seen: the duration
 * model times it from then on (and once.ts's grace period ends a start
 * Nova never processed). Shared by the starts of a pass.
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
 * Whether a record's status shows a start past Nova's conductor (it found
 * a host: the migration waits in the source's queue, copies, or ended):
 * no fast failure of the start is to come. `accepted` is the conductor's.
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
 * Whether a glance at the host's migrations (their latest record per VM,
 * `statusOf`) shows nothing to act on, so that it may stand in for a full
 * look due only for first looks: every migration in flight is still in
 * progress (none failed nor ended: a slot to refill, a failure to record)
 * and each start of ours (`issuedByUs`) is listed, its record saying how
 * it goes. Otherwise a full pass looks.
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
