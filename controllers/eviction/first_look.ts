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
 * When to look first at a start of ours issued at `issuedAtMs`: one poll
 * interval later, so that a fast failure (the conductor's NoValidHost: a
 * record `error` within a second) is seen and its slot refilled within a
 * poll interval or two, not when the start would have finished copying.
 * Undefined once a look came {@linkcode FIRST_LOOK_SHARE} of a poll
 * interval or more after the start (`lastLookMs`): the duration model
 * times it from then on. One look per start, shared by the starts of one
 * pass.
 *
 * @example
 * ```ts
 * import { firstLookAt } from "./first_look.ts";
 * console.log(firstLookAt(10_000, undefined, 2000)); // 12000
 * console.log(firstLookAt(10_000, 10_400, 2000)); // 12000: too soon to count
 * console.log(firstLookAt(10_000, 12_000, 2000)); // undefined: looked
 * ```
 */
export function firstLookAt(
  issuedAtMs: number,
  lastLookMs: number | undefined,
  pollMs: number,
): number | undefined {
  if (
    lastLookMs !== undefined &&
    lastLookMs - issuedAtMs >= pollMs * FIRST_LOOK_SHARE
  ) return undefined;
  return issuedAtMs + pollMs;
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
