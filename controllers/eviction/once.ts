/**
 * What this process knows of its own starts, confirms and aborts (the
 * notes in a drain's memory), and the rule that reads them.
 * Non-idempotent actions are sent once (issue 28): a start, a confirm or
 * an abort of ours whose outcome is not yet known is never sent again
 * until a direct look at Nova that began after its answer shows that it
 * is still needed. The informer's snapshot of a host rests on the list it
 * was built from, so one listed before the answer can never release an action,
 * however long ago it was sent: the rule, not a timer, decides.
 *
 * The looks' times are on the controller clock: a fresh observation's is
 * when its list began; a snapshot's is when its own list began
 * (openstack/informer/), whatever events it took in since.
 *
 * @module
 */

/**
 * What this process knows of a start it issued: in-process only (lost on
 * a restart, when the grace period stands in for it).
 */
export interface StartNote {
  /** Server id. */
  id: string;
  /**
   * pending: no answer yet; accepted: 202; refused: a definitive refusal
   * (a 4xx but 409); conflict: 409 (look at the VM); unknown: no answer
   * after all (timeout, reset) or a 5xx: resolved by observation.
   */
  state: "pending" | "accepted" | "refused" | "conflict" | "unknown";
  /** Nova's message with its request id (refused, conflict, unknown). */
  message?: string;
  /** For a refusal: whether its cause may go away by itself (no valid host). */
  transient?: boolean;
  /** live or cold (what was started). */
  kind?: "live" | "cold";
  /** Controller clock when it was issued. */
  issuedAtMs?: number;
  /** Controller clock when its answer (or its failure) came. */
  answeredAtMs?: number;
}

/**
 * A confirm or an abort this process sent, and when Nova answered it
 * (such an action is not sent again before a look that began
 * after its answer shows it still needed).
 */
export interface ActionNote {
  /** Controller clock when it was sent. */
  sentAtMs: number;
  /** Controller clock when its answer (or its failure) came; undefined: none yet. */
  answeredAtMs?: number;
}

/**
 * The controller clock time from which a direct look may show that a
 * start of ours, made at `startedMs`, was never processed; undefined
 * while its answer is awaited. An accepted start: after its answer and
 * the grace period (`graceMs`); an unknown answer (a 5xx, a timeout):
 * after that answer (the unanswered backoff paces the next try); a start
 * this process knows nothing of (made before a restart): after the grace
 * period.
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
 * Whether an action of ours may be sent (again): never sent, or answered
 * and the look this decision rests on began at least `afterMs` after that
 * answer (`lookedAtMs`, controller clock).
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
 * Forgets the notes whose keys are no longer tracked (the VM or the
 * migration left the in-flight set): they can decide nothing any more.
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
