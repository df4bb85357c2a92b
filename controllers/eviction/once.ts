/**
 * Non-idempotent actions are sent once: again only when a look listed after the answer shows it
 * still needed (a rule, not a timer). Times are on the controller clock.
 * @module
 */

/** What this process knows of a start it issued (lost on a restart: the grace period stands in). */
export interface StartNote {
  id: string;
  /** refused: a 4xx but 409; unknown: timeout, reset or 5xx (resolved by a look). */
  state: "pending" | "accepted" | "refused" | "conflict" | "unknown";
  /** Nova's message with its request id. */
  message?: string;
  /** For a refusal: whether its cause may go away by itself (no valid host). */
  transient?: boolean;
  kind?: "live" | "cold";
  issuedAtMs?: number;
  /** When its answer (or its failure) came. */
  answeredAtMs?: number;
}

/** A confirm, abort or force-complete this process sent, and when Nova answered it. */
export interface ActionNote {
  sentAtMs: number;
  /** When its answer (or its failure) came. */
  answeredAtMs?: number;
  serverId?: string;
  /** Nova's message when it refused it (a 4xx but 429): reported, never resent blindly. */
  refused?: string;
}

/**
 * From when a look may show a start was never processed (undefined while awaited; unknown: at once).
 *
 * @example
 * ```ts
 * import { startReleasableFromMs } from "./once.ts";
 * console.assert(startReleasableFromMs(0, { id: "a", state: "accepted", answeredAtMs: 90_000 }, 60_000) === 90_000);
 * console.assert(startReleasableFromMs(0, { id: "a", state: "unknown", answeredAtMs: 30_000 }, 60_000) === 30_000);
 * console.assert(startReleasableFromMs(0, undefined, 60_000) === 60_000);
 * console.assert(startReleasableFromMs(0, { id: "a", state: "pending" }, 60_000) === undefined);
 * ```
 */
export function startReleasableFromMs(
  startedMs: number,
  note: StartNote | undefined,
  graceMs: number,
): number | undefined {
  if (note?.state === "pending") return undefined;
  const answeredMs = note?.answeredAtMs;
  if (note?.state === "unknown") return answeredMs ?? startedMs + graceMs;
  return Math.max(startedMs + graceMs, answeredMs ?? startedMs);
}

/**
 * Whether an action may be sent (again): never sent, or answered `afterMs` before the look began.
 *
 * @example
 * ```ts
 * import { maySendAgain } from "./once.ts";
 * console.assert(maySendAgain(undefined, 5));
 * console.assert(!maySendAgain({ sentAtMs: 0 }, 5));
 * console.assert(!maySendAgain({ sentAtMs: 0, answeredAtMs: 10 }, 5));
 * console.assert(maySendAgain({ sentAtMs: 0, answeredAtMs: 10 }, 12));
 * console.assert(!maySendAgain({ sentAtMs: 0, answeredAtMs: 10 }, 12, 60_000));
 * ```
 */
export function maySendAgain(
  note: ActionNote | undefined,
  lookedAtMs: number,
  afterMs = 0,
): boolean {
  if (note === undefined) return true;
  if (note.answeredAtMs === undefined) return false;
  return lookedAtMs >= note.answeredAtMs + afterMs;
}

/**
 * Forgets the notes whose keys are not tracked.
 *
 * @example
 * ```ts
 * import { forgetUntracked } from "./once.ts";
 * const notes = new Map([["a", { sentAtMs: 0 }], ["b", { sentAtMs: 1 }]]);
 * forgetUntracked(notes, new Set(["b"]));
 * console.assert(!notes.has("a") && notes.has("b"));
 * ```
 */
export function forgetUntracked<T>(
  notes: Map<string, T>,
  tracked: ReadonlySet<string>,
): void {
  for (const key of [...notes.keys()]) {
    if (!tracked.has(key)) notes.delete(key);
  }
}
